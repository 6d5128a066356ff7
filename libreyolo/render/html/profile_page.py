"""The profile page: one profile's report (`libreyolo profile report profile.json`).

Reads the `ProfileReport` (the results of `summary`, `phases`, `kernels` and `ops`) and lays
them out: the verdict first, then the numbers that back it, then the tables to drill into. Every
number carries the reader JSON path that prints it (`markup.num`).

Pure: a report in, HTML text out.
"""

from __future__ import annotations

from collections.abc import Sequence

from libreyolo.analysis.phases import StepPhases
from libreyolo.analysis.report import ProfileReport
from libreyolo.analysis.summary import CategoryShare, Summary
from libreyolo.document.mode import Mode
from libreyolo.document.model import Execution
from libreyolo.document.phases import DATALOAD
from libreyolo.render.exec_text import exec_facts
from libreyolo.render.html import svg
from libreyolo.render.html.compute_card import compute_card
from libreyolo.render.html.markup import (
    Column,
    Src,
    banner,
    card,
    cards,
    definition_list,
    esc,
    name,
    note_list,
    num,
    section,
    table,
)
from libreyolo.render.html.page import document
from libreyolo.render.html.world_card import ranks_block
from libreyolo.render.summary_text import (
    CONTENDED_LINE,
    MEMORY_PRESSURE_LINE,
    TRACE_NOTE_LABEL,
    weak_percentiles_note,
)

UNSYNCED = "wall (unsynced)"


def _mode_label(mode: Mode) -> str:
    return mode.noun.capitalize()


def title(s: Summary) -> str:
    return f"{_mode_label(s.mode)} profile · {s.model or 'unknown model'}"


def banners(s: Summary) -> str:
    """The warnings that change how every number reads, as the text summary states them."""
    out = []
    if s.run.random_init:
        out.append(
            banner(
                "Randomly initialised weights: convolution timings are real, detections (and so "
                "postprocess/NMS time) are not."
            )
        )
    if s.metrics.get("contended"):
        out.append(banner(CONTENDED_LINE.strip("* "), kind="bad"))
    if s.metrics.get("memory_pressure"):
        out.append(banner(MEMORY_PRESSURE_LINE.strip("* "), kind="bad"))
    return "".join(out)


def verdict_block(s: Summary, src_prefix: Src = ("summary",)) -> str:
    """The verdict with its reason, levers and, when contended, the quiet-host reading."""
    v = s.verdict
    levers = "".join(f"<li>{esc(lever)}</li>" for lever in v.levers)
    quiet = ""
    if v.quiet_bound is not None:
        quiet = (
            f'<p class="quiet">Read as if the host were quiet, these numbers say '
            f"<b>{esc(v.quiet_bound.upper())}</b>: {esc(v.quiet_why or '')}</p>"
        )
    elif v.quiet_why is not None:
        quiet = f'<p class="quiet">As measured on the busy host: {esc(v.quiet_why)}</p>'

    return (
        f'<div class="verdict {esc(v.bound)}"><div class="bound">{esc(v.bound.upper())}</div>'
        f'<p class="why">{esc(v.why)}</p>'
        f"{f'<ul>{levers}</ul>' if levers else ''}{quiet}</div>"
    )


def split_bar(report: ProfileReport) -> str:
    """Where a step's time goes, at a glance: the phases' wall time per step as one bar."""
    rows = [
        (i, r)
        for i, r in enumerate(report.phases.rows)
        if r.wall_ms_per_step is not None and r.wall_ms_per_step > 0
    ]
    if not rows:
        return ""
    total = sum(r.wall_ms_per_step or 0.0 for _, r in rows)
    segments = [
        svg.Segment(
            r.phase,
            r.wall_ms_per_step or 0.0,
            ("phases", "phases", i, "wall_ms_per_step"),
            f"{r.phase}: {r.wall_ms_per_step:.2f} ms per step "
            f"({(r.wall_ms_per_step or 0.0) / total:.0%} of the phases' time)",
        )
        for i, r in rows
    ]
    legend = svg.legend(
        [
            (f"{seg.key} {seg.value:.2f} ms", svg.colour(seg.key, i))
            for i, seg in enumerate(segments)
        ]
    )
    return (
        '<figure class="split"><h3>Where a step\'s time goes (synced phases)</h3>'
        f"{svg.share_bar(segments, mark='split')}{legend}</figure>"
    )


def headline_cards(s: Summary) -> str:
    m = s.metrics
    items = [
        card("throughput", num(m.get("img_per_s"), ("summary", "img_per_s"), unit="img/s")),
        card("step", num(m.get("step_ms"), ("summary", "step_ms"), digits=2, unit="ms")),
    ]
    if s.latency is not None:
        lat = ("summary", "latency")
        items.append(
            card(
                "latency p50",
                num(s.latency.p50_ms, (*lat, "p50_ms"), digits=2, unit="ms"),
                sub=f"p90 {num(s.latency.p90_ms, (*lat, 'p90_ms'), digits=2)} · p99 "
                f"{num(s.latency.p99_ms, (*lat, 'p99_ms'), digits=2)} ms",
            )
        )
    vram = card("peak VRAM", num(m.get("peak_vram_mb"), ("summary", "peak_vram_mb"), unit="MB"))
    if s.has_gpu:
        items += [
            card("GPU util", num(m.get("gpu_util"), ("summary", "gpu_util"), scale=100, unit="%")),
            card(
                "Tensor Cores",
                num(m.get("tensorcore_pct"), ("summary", "tensorcore_pct"), unit="%"),
            ),
            vram,
            card(
                "kernels/step",
                num(m.get("kernels_per_step"), ("summary", "kernels_per_step"), digits=0),
                sub=f"~{num(m.get('mean_kernel_us'), ('summary', 'mean_kernel_us'), digits=0)} "
                "µs each",
            ),
        ]
    elif m.get("peak_vram_mb") is not None:  # a CUDA run without GPU activity: the allocator's
        items.append(vram)
    if s.mode == Mode.TRAIN and m.get("dataload_frac") is not None:
        items.append(
            card(
                DATALOAD,
                num(m.get("dataload_frac"), ("summary", "dataload_frac"), scale=100, unit="%"),
                sub=f"{num(m.get('dataload_ms'), ('summary', 'dataload_ms'), digits=2)} ms/step",
            )
        )
    if s.contention_unknown is None:
        c = ("summary", "contention")
        items.append(
            card(
                "CPU wait",
                num(m.get("cpu_wait_frac"), (*c, "cpu_wait_frac"), scale=100, unit="%"),
                sub=f"steal {num(m.get('steal_frac'), (*c, 'steal_frac'), scale=100)}%",
            )
        )
    return cards(items)


def _yes_no(value: bool | None) -> str:
    return "–" if value is None else ("on" if value else "off")


def _how_it_ran(execution: Execution | None) -> str:
    """The execution mode and its costs (`exec_facts`); a file before the record says so."""
    return "not recorded" if execution is None else esc(exec_facts(execution))


def run_facts(s: Summary, source: str) -> str:
    r, src = s.run, ("summary", "run")
    window = (
        f"{num(r.num_warmup, (*src, 'window', 'num_warmup'), digits=0)} warmup · "
        f"{num(r.num_measured, (*src, 'window', 'num_measured'), digits=0)} measured "
        f"({num(r.num_unsynced, (*src, 'window', 'num_unsynced'), digits=0)} unsynced, "
        f"{num(r.num_synced, (*src, 'window', 'num_synced'), digits=0)} synced) · "
        f"{num(r.num_bare, (*src, 'window', 'num_bare'), digits=0)} bare"
    )
    weights = esc(r.weights or "–") + (
        ' <span class="tag bad">random init</span>' if r.random_init else ""
    )
    trainer = (
        []
        if r.trainer is None
        else [("trainer", esc(r.trainer)), ("train", f"<code>{esc(r.train_command or '–')}</code>")]
    )
    return definition_list(
        [
            ("model", esc(r.model or "–")),
            *trainer,
            ("weights", weights),
            ("device", esc(r.device or "–")),
            ("device name", esc(r.device_name or "–")),
            ("batch", num(r.batch, (*src, "batch"), digits=0)),
            ("imgsz", num(r.imgsz, (*src, "imgsz"), digits=0)),
            ("AMP", _yes_no(r.amp)),
            ("how it ran", _how_it_ran(s.execution)),
            ("window", window),
            ("tool", f"libreyolo {esc(r.tool_version)}"),
            ("when", esc(r.created or "unknown")),
        ]
    ) + (
        f'<p class="paths">profile <code>{esc(source)}</code>'
        + (f" · trace <code>{esc(r.trace)}</code>" if r.trace else "")
        + "</p>"
    )


def _step_column(i: int, step: StepPhases, keys: list[str]) -> svg.StackedColumn:
    base: Src = ("phases", "per_step", i)
    kind = "synced" if step.synced else ("unsynced" if step.synced is False else "trace")
    flag = f"step {step.index}: outlier ({step.wall_ms:.2f} ms)" if step.outlier else ""
    if not step.phase_ms:
        tip = f"step {step.index} ({kind}): {step.wall_ms:.2f} ms"
        if step.dataload_ms is not None:
            tip += f", dataload {step.dataload_ms:.2f} ms"
        seg = svg.Segment(UNSYNCED, step.wall_ms, (*base, "wall_ms"), tip)
        return svg.StackedColumn(str(step.index), (seg,), faded=True, flag=flag)
    segments = [
        svg.Segment(
            phase,
            ms,
            (*base, "phase_ms", phase),
            f"step {step.index} ({kind}) {phase}: {ms:.2f} ms of {step.wall_ms:.2f} ms",
        )
        for phase, ms in step.phase_ms.items()
    ]
    rest = step.wall_ms - sum(step.phase_ms.values())
    if rest > 0.01 * step.wall_ms:
        segments.append(
            svg.Segment("other", rest, None, f"step {step.index}: {rest:.2f} ms outside the phases")
        )
    for phase in step.phase_ms:
        if phase not in keys:
            keys.append(phase)
    return svg.StackedColumn(str(step.index), tuple(segments), flag=flag)


def steps_chart(steps: Sequence[StepPhases], order: Sequence[str] = ()) -> str:
    """Each measured step as a column, stacked by phase in `order` (the profile's phase order;
    phases not in it follow as first seen)."""
    if not steps:
        return '<p class="intro">No per-step samples in this file.</p>'
    keys: list[str] = list(order)
    columns = [_step_column(i, step, keys) for i, step in enumerate(steps)]
    present = {seg.key for c in columns for seg in c.segments}
    legend_keys = [(k, svg.colour(k, i)) for i, k in enumerate(keys) if k in present]
    trace_only = all(step.source == "trace" for step in steps)
    if any(c.faded for c in columns):
        legend_keys.append(
            ("step span (trace)" if trace_only else UNSYNCED + ": no phase split", svg.GREY)
        )
    if "other" in present:
        legend_keys.append(("other (outside the phases)", svg.GREY))
    chart = svg.stacked_columns(
        columns, [*keys, "other", UNSYNCED], mark="steps", y_label="ms per step"
    )
    if trace_only:
        caption = (
            "Each ProfilerStep of the trace: from its start to the end of the GPU work it "
            "launched (its CPU span where there is no GPU). A bare trace has no phase split."
        )
    else:
        caption = (
            "Each measured step. Unsynced steps (faded) run ahead of the device: their wall time "
            "is the honest step time. Synced steps wait for the device after every phase, so "
            "their split is exact."
        )
    outliers = sum(1 for s in steps if s.outlier)
    if outliers:
        caption += f" ▼ marks {outliers} outlier step{'s' if outliers > 1 else ''} (Tukey's fence)."
    return (
        f"<figure>{svg.legend(legend_keys)}{chart}<figcaption>{esc(caption)}</figcaption></figure>"
    )


def latency_block(s: Summary) -> str:
    lat = s.latency
    if lat is None:
        return ""
    src = ("summary", "latency")
    bins = [
        svg.HistBin(b.lo_ms, b.hi_ms, b.count, (*src, "histogram", i, "count"))
        for i, b in enumerate(lat.histogram)
    ]
    guides = [
        svg.Guide(value, label)
        for value, label in ((lat.p50_ms, "p50"), (lat.p90_ms, "p90"), (lat.p99_ms, "p99"))
        if value is not None
    ]
    hist = (
        svg.histogram(bins, guides, mark="latency", x_label="latency (ms)")
        if bins
        else '<p class="intro">The file holds no latency samples.</p>'
    )
    facts = definition_list(
        [
            ("p50", num(lat.p50_ms, (*src, "p50_ms"), digits=2, unit="ms")),
            ("p90", num(lat.p90_ms, (*src, "p90_ms"), digits=2, unit="ms")),
            ("p99", num(lat.p99_ms, (*src, "p99_ms"), digits=2, unit="ms")),
            ("mean", num(lat.mean_ms, (*src, "mean_ms"), digits=2, unit="ms")),
            ("samples", num(lat.num_samples, (*src, "n"), digits=0)),
        ]
    )
    stages = ""
    if s.stages_ms is not None:
        rows = [
            svg.BarRow(
                stage,
                (
                    svg.Bar(
                        ms or 0.0,
                        ("summary", "stages_ms", stage) if ms is not None else None,
                        f"{stage}: {ms:.3f} ms" if ms is not None else f"{stage}: not measured",
                        svg.colour(stage, i),
                        f"{ms:.2f} ms" if ms is not None else "–",
                    ),
                ),
            )
            for i, (stage, ms) in enumerate(s.stages_ms.items())
        ]
        stages = (
            "<figure><h3>Stage split (synced iterations)</h3>"
            f"{svg.hbars(rows, mark='stages', label='stage split')}</figure>"
        )
    return (
        f'<div class="grid2"><figure><h3>Latency histogram</h3>{hist}</figure>'
        f"<div>{facts}{stages}</div></div>"
    )


def phase_table(report: ProfileReport) -> str:
    rows = report.phases.rows
    if not rows:
        return '<p class="intro">No phases recorded.</p>'
    gpu = report.summary.has_gpu
    cols = [Column("phase", numeric=False), Column("wall ms/step")]
    cols += [Column("GPU ms/step")] if gpu else []
    cols += [Column("kernels/step"), Column("ops/step")] if gpu else [Column("ops/step")]
    body, keys, bars = [], [], []
    for i, r in enumerate(rows):
        src: Src = ("phases", "phases", i)
        cells = [esc(r.phase), num(r.wall_ms_per_step, (*src, "wall_ms_per_step"), digits=2)]
        key: list[object] = [r.phase, r.wall_ms_per_step]
        if gpu:
            cells.append(num(r.gpu_ms_per_step, (*src, "gpu_ms_per_step"), digits=3))
            cells.append(num(r.kernels_per_step, (*src, "kernels_per_step"), digits=1))
            key += [r.gpu_ms_per_step, r.kernels_per_step]
        cells.append(num(r.ops_per_step, (*src, "ops_per_step"), digits=1))
        key.append(r.ops_per_step)
        body.append(cells)
        keys.append(key)
        value = r.wall_ms_per_step if r.wall_ms_per_step is not None else 0.0
        bar = svg.Bar(
            value,
            (*src, "wall_ms_per_step") if r.wall_ms_per_step is not None else None,
            f"{r.phase}: {value:.3f} ms/step",
            svg.colour(r.phase, i),
            f"{value:.2f} ms",
        )
        bars.append(svg.BarRow(r.phase, (bar,)))
    if report.summary.mode == Mode.INFER:  # the latency section draws the stage split
        return table(cols, body, sort_keys=keys)
    chart = svg.hbars(bars, mark="phases", label="wall ms per phase")
    return (
        f'<div class="grid2"><div>{table(cols, body, sort_keys=keys)}</div>'
        f"<figure>{chart}<figcaption>wall ms per step by phase</figcaption></figure></div>"
    )


def _category_chart(shares: Sequence[CategoryShare], key: str, mark: str, what: str) -> str:
    rows = [
        svg.BarRow(
            c.name,
            (
                svg.Bar(
                    c.share * 100,
                    ("summary", key, i, "pct"),
                    f"{c.name}: {c.share * 100:.1f}% of {what}, {c.ms_per_step:.3f} ms/step",
                    svg.PALETTE[i % len(svg.PALETTE)],
                    f"{c.share * 100:.1f}%  {c.ms_per_step:.2f} ms",
                ),
            ),
        )
        for i, c in enumerate(shares)
    ]
    return svg.hbars(rows, mark=mark, label=what)


def mix_block(s: Summary) -> str:
    parts = []
    if s.categories:
        parts.append(
            "<figure><h3>Kernel categories (share of GPU time)</h3>"
            f"{_category_chart(s.categories, 'categories', 'kernel-mix', 'GPU time')}</figure>"
        )
    if s.op_categories:
        parts.append(
            "<figure><h3>Op categories (share of CPU op self time)</h3>"
            f"{_category_chart(s.op_categories, 'op_categories', 'op-mix', 'CPU op self time')}"
            "</figure>"
        )
    return f'<div class="grid2">{"".join(parts)}</div>' if parts else ""


def kernel_table(report: ProfileReport) -> str:
    rows = report.kernels.rows
    if not rows:
        return '<p class="intro">No GPU kernels in this profile.</p>'
    cols = [
        Column("kernel", numeric=False),
        Column("category", numeric=False),
        Column("ms/step"),
        Column("% GPU", hint="share of all kernel time"),
        Column("calls/step"),
    ]
    body, keys = [], []
    for i, r in enumerate(rows):
        src: Src = ("kernels", "kernels", i)
        tc = ' <span class="tag tc" title="runs on Tensor Cores">TC</span>' if r.tensor_core else ""
        body.append(
            [
                name(r.label) + tc,
                esc(r.category),
                num(r.ms_per_step, (*src, "ms_per_step"), digits=3),
                num(r.share * 100, (*src, "pct_of_gpu")),
                num(r.num_per_step, (*src, "count_per_step"), digits=1),
            ]
        )
        keys.append([r.label, r.category, r.ms_per_step, r.share, r.num_per_step])
    return table(cols, body, sort_keys=keys)


def op_table(report: ProfileReport) -> str:
    result = report.ops
    if not result.rows:
        return '<p class="intro">No ops in this profile.</p>'
    what = "total" if result.inclusive_only else "self"
    cols = [
        Column("op", numeric=False),
        Column(f"{what} ms/step"),
        Column("% CPU", hint=f"share of all op {what} time"),
        Column("calls/step"),
    ]
    body, keys = [], []
    for i, r in enumerate(result.rows):
        src: Src = ("ops", "ops", i)
        ms = r.total_ms_per_step if r.self_ms_per_step is None else r.self_ms_per_step
        body.append(
            [
                name(r.name),
                num(ms, (*src, "ms_per_step"), digits=3),
                num(r.share * 100, (*src, "pct_of_cpu_ops")),
                num(r.num_per_step, (*src, "count_per_step"), digits=1),
            ]
        )
        keys.append([r.name, ms, r.share, r.num_per_step])
    return table(cols, body, sort_keys=keys)


def trials_block(s: Summary) -> str:
    if not s.trials:
        return ""
    names = [
        m
        for m in ("img_per_s", "step_ms", "latency_p50_ms", "latency_p99_ms")
        if any(t.metrics.get(m) is not None for t in s.trials)
    ]
    pids = all(t.pid is not None for t in s.trials)
    cols = [
        Column("trial"),
        *([Column("process", numeric=False)] if pids else []),
        *(Column(m) for m in names),
        Column("verdict", numeric=False),
    ]
    body, keys = [], []
    for i, t in enumerate(s.trials):
        body.append(
            [
                num(t.index, ("summary", "trials", i, "index"), digits=0),
                *([esc(str(t.pid))] if pids else []),
                *(num(t.metrics[m], ("summary", "trials", i, m), digits=2) for m in names),
                esc(t.bound or "–"),
            ]
        )
        keys.append([t.index, *([t.pid] if pids else []), *(t.metrics[m] for m in names), t.bound])
    spread = [
        f"{esc(sp.metric)} {num(sp.mean, ('summary', 'trial_spread', sp.metric, 'mean'), digits=2)}"
        f" ± {num(sp.sd, ('summary', 'trial_spread', sp.metric, 'sd'), digits=2)}"
        for sp in s.trial_spread
    ]
    where = {True: ", each in a fresh process", False: ", all in one process", None: ""}
    summary_line = (
        f'<p class="intro">Mean ± SD over {len(s.trials)} trials'
        f"{where[s.isolated_trials]}: {'; '.join(spread)}. Scalar numbers elsewhere "
        "on this page are the trial means; tables come from the last trial.</p>"
    )
    return summary_line + table(cols, body, sort_keys=keys)


def tensor_block(s: Summary) -> str:
    """A training step's tensors at their peak by category, the prediction and the lever."""
    view = s.tensors
    if view is None:
        return ""
    src = ("summary", "tensor_memory")
    rows = [
        svg.BarRow(
            row.category,
            (
                svg.Bar(
                    row.mb,
                    (*src, "categories", i, "mb"),
                    f"{row.category}: {row.mb:.1f} MB, {row.share * 100:.1f}% of the peak",
                    svg.PALETTE[i % len(svg.PALETTE)],
                    f"{row.mb:.1f} MB  {row.share * 100:.1f}%",
                ),
            ),
        )
        for i, row in enumerate(view.categories)
        if row.mb > 0
    ]
    chart = svg.hbars(rows, mark="tensor-memory", label="MB at the tensor peak")
    facts = [
        ("tensor peak", num(view.peak_mb, (*src, "peak_mb"), unit="MB")),
        ("peak in the", esc(view.phase_at_peak)),
        ("batch, imgsz", f"{view.batch}, {view.imgsz}"),
    ]
    prediction = view.prediction
    if prediction is not None:
        facts.append(
            (
                "predicted",
                num(prediction.predicted_mb, (*src, "prediction", "predicted_mb"), unit="MB")
                + " ("
                + num(prediction.error_pct, (*src, "prediction", "error_pct"), signed=True)
                + "%)",
            )
        )
        facts.append(
            (
                "one more image",
                num(prediction.per_image_mb, (*src, "prediction", "per_image_mb"), unit="MB"),
            )
        )
    if view.lever:
        facts.append(("lever", esc(f"{view.largest}: {view.lever}")))
    return (
        '<div class="grid2"><figure><h3>Tensors at a training step\'s peak, by category</h3>'
        f"{chart}</figure><div>{definition_list(facts)}</div></div>"
    )


def memory_block(s: Summary) -> str:
    tensors = tensor_block(s)
    mem = s.memory
    if mem is None:
        return tensors + '<p class="intro">No device memory was recorded (a CPU run).</p>'
    src = ("summary", "memory")
    thrash = (
        '<span class="tag bad">thrash</span>'
        if mem.thrash
        else '<span class="tag ok">no thrash</span>'
    )
    return tensors + definition_list(
        [
            ("peak allocated", num(mem.peak_allocated_mb, (*src, "peak_allocated_mb"), unit="MB")),
            ("peak reserved", num(mem.peak_reserved_mb, (*src, "peak_reserved_mb"), unit="MB")),
            ("alloc retries", num(mem.num_alloc_retries, (*src, "num_alloc_retries"), digits=0)),
            (
                "cudaMalloc/step",
                num(mem.cuda_mallocs_per_step, (*src, "cuda_mallocs_per_step"), digits=1),
            ),
            ("verdict", thrash),
        ]
    )


def notes(s: Summary) -> list[str]:
    """Every note the text summary prints, in its order, the trace's caveats labelled."""
    weak = weak_percentiles_note(s)
    out = [weak] if weak else []
    if s.contention_unknown is not None:
        out.append(f"host: {s.contention_unknown}")
    for row in s.hardest_steps:
        out.append(
            f"step #{row.index}{' (synced)' if row.synced else ''} waited {row.cpu_wait_ms:.1f} ms "
            f"for a CPU ({row.cpu_wait_frac * 100:.0f}% of its runnable time)"
        )
    return out + list(s.notes) + [f"{TRACE_NOTE_LABEL}: {note}" for note in s.trace_notes]


def trace_help(s: Summary, source: str) -> str:
    trace = s.run.trace
    if trace is None:
        return (
            '<p class="intro">This profile has no Chrome trace beside it (measured with '
            "<code>--no-trace</code>, or a 1.6.0 file).</p>"
        )
    what = "op and kernel" if s.has_gpu else "op"  # a CPU-only trace holds no kernels
    return (
        f"<p>The timeline of every {what} is in <code>{esc(trace)}</code> next to "
        f"<code>{esc(source)}</code>. Open it in Perfetto: go to ui.perfetto.dev in a browser, "
        "choose <i>Open trace file</i> and pick the file (it is read locally, not uploaded). "
        "chrome://tracing opens it too. For traces over about 1 GB use Perfetto's "
        "<code>trace_processor</code> and open the UI against it.</p>"
    )


def body(report: ProfileReport) -> tuple[list[tuple[str, str]], str]:
    """The page's sections: (contents line, HTML)."""
    s = report.summary
    toc: list[tuple[str, str]] = [("verdict", "verdict"), ("limit", "limit")]
    parts = [
        banners(s),
        section("verdict", "Verdict", verdict_block(s) + headline_cards(s) + split_bar(report)),
        section("limit", "How far from the limit", compute_card(s)),
    ]
    ranks = ranks_block(s)
    if ranks:
        toc.append(("ranks", "ranks"))
        parts.append(section("ranks", "Ranks", ranks))
    toc.append(("steps", "per step"))
    parts += [
        section(
            "steps",
            "Per-step time",
            steps_chart(report.phases.per_step, [r.phase for r in report.phases.rows]),
        ),
    ]
    if s.latency is not None:
        toc.append(("latency", "latency"))
        parts.append(section("latency", "Latency", latency_block(s)))
    toc += [("run", "run"), ("phases", "phases")]
    parts.append(section("run", "Run", run_facts(s, report.source)))
    parts.append(section("phases", "Phases", phase_table(report)))
    mix = mix_block(s)
    if mix:
        toc.append(("mix", "mix"))
        parts.append(section("mix", "Where the time goes", mix))
    if s.has_gpu:
        toc.append(("kernels", "kernels"))
        parts.append(
            section(
                "kernels",
                "Top kernels",
                kernel_table(report),
                intro="Per step, by GPU time; click a heading to sort.",
            )
        )
    toc.append(("ops", "ops"))
    parts.append(
        section("ops", "Top ops", op_table(report), intro="Per step, by CPU time; click to sort.")
    )
    if s.trials:
        toc.append(("trials", "trials"))
        parts.append(section("trials", "Trials", trials_block(s)))
    toc.append(("memory", "memory"))
    parts.append(section("memory", "Memory", memory_block(s)))
    note_items = notes(s)
    if note_items:
        toc.append(("notes", "notes"))
        parts.append(section("notes", "Notes and warnings", note_list(note_items)))
    toc.append(("trace", "trace"))
    parts.append(section("trace", "Open the trace", trace_help(s, report.source)))
    return toc, "".join(parts)


def _exec_tag(execution: Execution | None) -> str:
    """`exec compile` in the header for a non-eager run; nothing for eager or unknown."""
    if execution is None or execution.name == "eager":
        return ""
    return f"exec {execution.name}"


def profile_page(report: ProfileReport) -> str:
    """The whole page for one profile."""
    s = report.summary
    toc, content = body(report)
    r = s.run
    subtitle = " · ".join(
        esc(part)
        for part in (
            r.device or "unknown device",
            f"batch {r.batch}" if r.batch is not None else "",
            f"imgsz {r.imgsz}" if r.imgsz is not None else "",
            f"AMP {_yes_no(r.amp)}" if r.amp is not None else "",
            _exec_tag(s.execution),
            r.created or "",
        )
        if part
    )
    footer = (
        f"Made by libreyolo profile report from <code>{esc(report.source)}</code>; libreyolo "
        f"{esc(r.tool_version)} measured it. Every number here is one that <code>libreyolo "
        "profile summary|phases|kernels|ops --json</code> prints for the same file."
    )
    return document(
        title=title(s),
        subtitle=subtitle,
        toc=toc,
        body=content,
        footer=footer,
        inputs=[report.source],
    )
