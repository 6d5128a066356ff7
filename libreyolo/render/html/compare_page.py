"""The comparison page: two profiles side by side (`libreyolo profile report before after`).

Reads a `CompareReport`: `compare`'s result for the pair and each side's own report. The
deltas, the significance calls and the per-step changes are read from compare's `--json` view
of that same result (`to_jsonable`), so each number shown is, by construction, the value at the
`["compare", ...]` path its `data-src` names; a side's own numbers (its verdict, its headline)
sit inside a `data-input` scope naming that side's file and cite `summary` paths.

Must not: compute anything `compare` does not (no new deltas, shares or tests), or show a
better/worse call by colour alone (an arrow and a word go with it). Pure: a report in, HTML out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from libreyolo.analysis.compare import repeat_command
from libreyolo.analysis.delta import SHARE_NOISE_POINTS
from libreyolo.analysis.report import CompareReport, ProfileReport
from libreyolo.document.json_value import JsonObject
from libreyolo.render.html import svg
from libreyolo.render.html.markup import (
    MISSING,
    Column,
    Src,
    banner,
    definition_list,
    esc,
    name,
    num,
    scope,
    section,
    table,
)
from libreyolo.render.html.page import document
from libreyolo.render.html.profile_page import banners, headline_cards, verdict_block
from libreyolo.render.jsondoc import to_jsonable
from libreyolo.render.safe import short_name

SIDES = ("before", "after")
SIDE_COLOURS = (svg.GREY, svg.PALETTE[0])  # before muted, after strong: apart in greyscale too
STATUS_MARK = {"changed": "", "new": "+ new", "gone": "− gone"}


@dataclass(frozen=True, slots=True)
class Metric:
    """One row of the deltas table: compare's JSON key, how to show it, which way is better."""

    key: str
    label: str
    higher_is_better: bool | None  # None: no direction (the verdict)
    digits: int = 2
    unit: str = ""
    scale: float = 1.0
    share: bool = False  # a fraction 0..1: its change is compare's `change_points`, not a ratio


IMG = Metric("img_per_s", "throughput", True, 1, "img/s")
MS_PER_IMAGE = Metric("ms_per_image", "time per image", False, 3, "ms")
STEP = Metric("step_ms", "step", False, 2, "ms")
P50 = Metric("latency_p50_ms", "latency p50", False, 2, "ms")
P99 = Metric("latency_p99_ms", "latency p99", False, 2, "ms")
GPU_UTIL = Metric("gpu_util", "GPU util", True, 1, "%", 100.0, share=True)
HOST = Metric("host_overhead_ms_per_step", "host overhead", False, 2, "ms/step")
LAUNCHES = Metric("launches_per_step", "launches/step", False, 0)
CPU_WAIT = Metric("cpu_wait_frac", "CPU wait", False, 1, "%", 100.0, share=True)
BOUND = Metric("bound", "verdict", None)


class _Doc:
    """compare's `--json` document, read by path; every number leaves through `num`."""

    def __init__(self, doc: JsonObject) -> None:
        self.doc = doc

    def at(self, *path: str | int) -> Any:
        node: Any = self.doc
        for key in path:
            if node is None:
                return None
            node = node[key]
        return node

    def num(self, *path: str | int, **style: Any) -> str:
        return num(self.at(*path), ("compare", *path), **style)


def _trials(report: ProfileReport) -> str:
    """The side's --repeat trials, or that it is one measured window (it stores no trials, and
    "0" would read as a run that measured nothing)."""
    count = report.summary.num_trials
    if count < 2:
        return "1 run (a single window, no --repeat trials)"
    return num(count, ("summary", "num_trials"), digits=0)


def _side_facts(report: ProfileReport) -> str:
    r, src = report.summary.run, ("summary", "run")
    amp = "–" if r.amp is None else ("on" if r.amp else "off")
    weights = esc(r.weights or "–") + (
        ' <span class="tag bad">random init</span>' if r.random_init else ""
    )
    return definition_list(
        [
            ("model", esc(r.model or "–")),
            ("weights", weights),
            ("device", esc(r.device_name or r.device or "–")),
            ("batch", num(r.batch, (*src, "batch"), digits=0)),
            ("imgsz", num(r.imgsz, (*src, "imgsz"), digits=0)),
            ("AMP", amp),
            ("trials", _trials(report)),
            ("tool", f"libreyolo {esc(r.tool_version)}"),
            ("when", esc(r.created or "unknown")),
            ("profile", f"<code>{esc(report.source)}</code>"),
        ]
    )


def runs_block(report: CompareReport) -> str:
    """Both runs' identities, side by side, each in its own file's scope."""
    sides = [
        scope(
            [side.source],
            f'<h3><span class="side {label}">{label}</span></h3>{_side_facts(side)}',
        )
        for label, side in zip(SIDES, (report.before, report.after), strict=True)
    ]
    return f'<div class="grid2">{"".join(sides)}</div>'


def warnings_block(report: CompareReport, doc: _Doc) -> str:
    """compare's warnings, then a line for each side measured as one window (no trials), with
    the command that made that side's profile (`infer` or `run`) and its --repeat."""
    out = [banner(str(w)) for w in doc.at("warnings") or []]
    n = doc.at("img_per_s", "n") or [1, 1]
    sides = (report.before, report.after)
    single = [
        (label, side) for label, side, count in zip(SIDES, sides, n, strict=True) if count < 2
    ]
    if single:
        what = "sides are single windows" if len(single) > 1 else "side is a single window"
        command = repeat_command(side.summary.mode for _, side in single)
        out.append(
            banner(
                f"The {' and '.join(label for label, _ in single)} {what} (no --repeat trials), "
                f"so no delta has a significance call: measure both with {command} for one.",
                kind="info",
            )
        )
    return "".join(out)


def _direction(metric: Metric, row: Mapping[str, object]) -> str:
    """The change as an arrow and a word: better, worse or the same; none for the verdict. A
    share that compare says did not move past its noise floor is neither better nor worse."""
    change = row.get("change_points" if metric.share else "change")
    if metric.higher_is_better is None:
        same = row.get("before") == row.get("after")
        return "same" if same else '<span class="dir moved">changed</span>'
    if not isinstance(change, int | float):
        return MISSING
    if metric.share and row.get("moved") is False:
        return '<span class="dir same">= within noise</span>'
    if round(change * (1 if metric.share else 100), 1) == 0:
        return '<span class="dir same">= same</span>'
    better = (change > 0) == metric.higher_is_better
    arrow = "↑" if change > 0 else "↓"
    word = "better" if better else "worse"
    noise = ", within noise" if row.get("significant") is False else ""
    cls = ("better" if better else "worse") + (" ns" if noise else "")
    return f'<span class="dir {cls}">{arrow} {word}{noise}</span>'


def _call(doc: _Doc, key: str) -> str:
    """A tested delta's significance call and its arithmetic, or why there is none."""
    row = doc.at(key)
    if row is None or "significant" not in row:
        return '<span class="na">not tested</span>'
    text = esc(row["significance"])
    if row["significant"] is None:
        return f'<span class="tag">[{text}]</span>'
    tag = (
        '<span class="tag ok">significant</span>'
        if row["significant"]
        else '<span class="tag">NOT significant</span>'
    )
    pairs = [("trials: mean", "mean", 2), ("SD", "std", 2), ("n", "n", 0)]
    parts = [
        f"{label} {doc.num(key, field, 0, digits=d)} / {doc.num(key, field, 1, digits=d)}"
        for label, field, d in pairs
    ]
    parts += [
        f"SE {doc.num(key, 'standard_error', digits=3)}",
        f"k {doc.num(key, 'threshold_multiplier', digits=2)}",
        f"df {doc.num(key, 'df', digits=1)}",
    ]
    return f'{tag}<div class="sig">{" · ".join(parts)}<br><code>{text}</code></div>'


def _delta_row(metric: Metric, doc: _Doc) -> list[str]:
    row = doc.at(metric.key)
    if metric.higher_is_better is None:
        values = [name(row.get(side) or "–") for side in SIDES]
        change = MISSING
    else:
        values = [
            doc.num(metric.key, side, digits=metric.digits, unit=metric.unit, scale=metric.scale)
            for side in SIDES
        ]
        change = (
            doc.num(metric.key, "change_points", digits=1, unit="points", signed=True)
            if metric.share
            else doc.num(metric.key, "change", scale=100, unit="%", signed=True)
        )
    return [
        esc(metric.label),
        *values,
        change,
        _direction(metric, row),
        _call(doc, metric.key),
    ]


def deltas_block(report: CompareReport, doc: _Doc) -> str:
    """The headline deltas with their significance calls, in compare's order."""
    c = report.comparison
    metrics = [IMG]
    if doc.at("ms_per_image", "before") and doc.at("ms_per_image", "after"):
        metrics.append(MS_PER_IMAGE)
    metrics.append(STEP)
    metrics += [m for m in (P50, P99) if doc.at(m.key) is not None]
    if c.has_gpu:  # on CPU-only profiles these read 0 % / 0: noise, not information
        metrics += [GPU_UTIL, HOST, LAUNCHES]
    if (
        doc.at("cpu_wait_frac", "before") is not None
        or doc.at("cpu_wait_frac", "after") is not None
    ):
        metrics.append(CPU_WAIT)
    metrics.append(BOUND)
    columns = [
        Column("metric", numeric=False),
        Column("before"),
        Column("after"),
        Column(
            "change",
            hint="(after − before) / before; for a share (GPU util, CPU wait) the difference "
            "in percentage points, within noise under "
            f"{SHARE_NOISE_POINTS:g} points",
        ),
        Column("", numeric=False),
        Column(
            "significance",
            numeric=False,
            hint="Welch's two-sided t-test over the --repeat trials: significant when "
            "|mean_after − mean_before| > k × SE, k = max(2, t quantile at df)",
        ),
    ]
    rows = [_delta_row(m, doc) for m in metrics]
    gate = doc.at("gate")
    gate_line = ""
    if gate is not None:
        verdict = "FAILED" if gate["failed"] else "passed"
        gate_line = (
            f'<p class="gate {"bad" if gate["failed"] else "ok"}">gate on '
            f"{esc(gate['metric'])}: <b>{verdict}</b>, change "
            f"{doc.num('gate', 'change_pct', signed=True, unit='%')} against "
            f"{doc.num('gate', 'threshold_pct', unit='%')}</p>"
        )
    return table(columns, rows, sortable=False) + gate_line


def _bar(value: Any, src: Src, side: int, phase: str, what: str) -> svg.Bar:
    if not isinstance(value, int | float):
        return svg.Bar(0.0, None, f"{phase} {SIDES[side]}: no {what}", SIDE_COLOURS[side], "–")
    return svg.Bar(
        float(value),
        src,
        f"{phase} {SIDES[side]}: {value:.3f} ms/step {what}",
        SIDE_COLOURS[side],
        f"{value:.2f} ms",
    )


def _phase_chart(doc: _Doc, key: str, mark: str, what: str) -> str:
    rows = [
        svg.BarRow(
            row["phase"],
            tuple(
                _bar(
                    row[key][i], ("compare", "changes", "phases", p, key, i), i, row["phase"], what
                )
                for i in range(2)
            ),
        )
        for p, row in enumerate(doc.at("changes", "phases") or [])
    ]
    return svg.hbars(rows, mark=mark, label=f"{what} ms per step by phase, before and after")


def _phase_table(doc: _Doc, has_wall: bool, has_gpu: bool) -> str:
    cols = [Column("phase", numeric=False)]
    if has_wall:
        cols += [Column("wall before"), Column("wall after"), Column("wall change")]
        cols.append(Column("share", hint="this phase's part of the step change"))
    if has_gpu:
        cols += [Column("GPU before"), Column("GPU after"), Column("GPU change")]
    cols.append(Column("significance", numeric=False))
    body, keys = [], []
    for p, row in enumerate(doc.at("changes", "phases") or []):
        src = ("changes", "phases", p)
        cells, key = [esc(row["phase"])], [row["phase"]]
        if has_wall:
            cells += [
                doc.num(*src, "wall_ms", 0, digits=3),
                doc.num(*src, "wall_ms", 1, digits=3),
                doc.num(*src, "wall_change_ms", digits=3, signed=True),
                doc.num(*src, "share_of_change", scale=100, digits=0, unit="%"),
            ]
            key += [*row["wall_ms"], row["wall_change_ms"], row["share_of_change"]]
        if has_gpu:
            cells += [
                doc.num(*src, "gpu_ms", 0, digits=3),
                doc.num(*src, "gpu_ms", 1, digits=3),
                doc.num(*src, "gpu_change_ms", digits=3, signed=True),
            ]
            key += [*row["gpu_ms"], row["gpu_change_ms"]]
        call = {True: "significant", False: "NOT significant"}.get(row["significant"])
        tag = (
            f'<span class="tag{" ok" if row["significant"] else ""}">{call}</span> ' if call else ""
        )
        cells.append(f"{tag}<code>{esc(row['significance'])}</code>")
        key.append(row["significance"])
        body.append(cells)
        keys.append(key)
    return table(cols, body, sort_keys=keys)


def phases_block(report: CompareReport, doc: _Doc) -> str:
    """The step's change, each phase before and after as bars, and the per-phase table."""
    if doc.at("changes") is None:
        return '<p class="intro">compare found no per-step changes to show.</p>'
    summed = doc.at("changes", "total_from") == "phases"  # no step time: the phases' sum
    step = (
        f"<p>step {doc.num('changes', 'step_ms', 0, digits=3, unit='ms')} → "
        f"{doc.num('changes', 'step_ms', 1, digits=3, unit='ms')}, change "
        f"{doc.num('changes', 'total_change_ms', digits=3, signed=True, unit='ms')}"
        f"{' (the sum of the phases)' if summed else ''}; the phases' own change "
        f"{doc.num('changes', 'phase_change_ms', digits=3, signed=True, unit='ms')}</p>"
    )
    if not doc.at("changes", "phases"):
        return step + '<p class="intro">Neither profile recorded phases.</p>'
    has_gpu = bool(doc.at("changes", "has_gpu"))
    legend = svg.legend(list(zip(SIDES, SIDE_COLOURS, strict=True)))
    charts = []
    has_wall = any(v is not None for row in doc.at("changes", "phases") for v in row["wall_ms"])
    if has_wall:
        charts.append(
            f"<figure><h3>Wall time per step</h3>{legend}"
            f"{_phase_chart(doc, 'wall_ms', 'phases-wall', 'wall')}</figure>"
        )
    if has_gpu:
        charts.append(
            f"<figure><h3>GPU time per step</h3>{legend}"
            f"{_phase_chart(doc, 'gpu_ms', 'phases-gpu', 'GPU')}</figure>"
        )
    return f'{step}<div class="grid2">{"".join(charts)}</div>{_phase_table(doc, has_wall, has_gpu)}'


def _rows_table(doc: _Doc, what: str) -> str:
    """One diff table (ops or kernels): the changed rows, then the new, then the gone."""
    cols = [
        Column("", numeric=False, hint="new: after only; gone: before only"),
        Column("name", numeric=False),
        Column("before ms"),
        Column("after ms"),
        Column("change ms"),
        Column("calls before"),
        Column("calls after"),
    ]
    body, keys = [], []
    for status in ("changed", "new", "gone"):
        for i, row in enumerate(doc.at("changes", what, status) or []):
            src = ("changes", what, status, i)
            via = row.get("matched_by") == "op"
            merged = row["num_merged"]
            tags = ' <span class="tag" title="paired by launching op">by op</span>' if via else ""
            if max(merged) > 1:
                tags += f' <span class="tag">{merged[0]} → {merged[1]} names</span>'
            body.append(
                [
                    f'<span class="status {status}">{STATUS_MARK[status]}</span>',
                    name(row["name"]) + tags,
                    doc.num(*src, "ms", 0, digits=3),
                    doc.num(*src, "ms", 1, digits=3),
                    doc.num(*src, "change_ms", digits=3, signed=True),
                    doc.num(*src, "calls", 0, digits=1),
                    doc.num(*src, "calls", 1, digits=1),
                ]
            )
            keys.append([status, row["name"], *row["ms"], row["change_ms"], *row["calls"]])
    if not body:
        return f'<p class="intro">No {what} on either side.</p>'
    base = ("changes", what)
    more = (
        f'<p class="intro">{doc.num(*base, "num_matched", digits=0)} matched, '
        f"{doc.num(*base, 'num_new', digits=0)} new, {doc.num(*base, 'num_gone', digits=0)} "
        "gone in all; the largest shown.</p>"
    )
    return table(cols, body, sort_keys=keys) + more


def moved_block(doc: _Doc) -> tuple[list[tuple[str, str]], str]:
    """The ops and (with a GPU) the kernels that moved most: (contents entries, sections)."""
    if doc.at("changes") is None:
        return [], ""
    op_time = esc(doc.at("changes", "op_time"))
    toc = [("ops", "ops")]
    parts = [
        section(
            "ops",
            "Ops that moved",
            _rows_table(doc, "ops"),
            intro=f"CPU {op_time} time per step, by the size of the change; click to sort.",
        )
    ]
    if doc.at("changes", "kernels") is not None:
        toc.append(("kernels", "kernels"))
        parts.append(
            section(
                "kernels",
                "Kernels that moved",
                _rows_table(doc, "kernels"),
                intro="GPU time per step, matched by normalised name, then by launching op. "
                f"Rule: {esc(doc.at('changes', 'kernel_rule'))}",
            )
        )
    return toc, "".join(parts)


def verdicts_block(report: CompareReport) -> str:
    """Each side's own verdict and headline numbers, from its own summary."""
    sides = [
        scope(
            [side.source],
            f'<h3><span class="side {label}">{label}</span></h3>{banners(side.summary)}'
            f"{verdict_block(side.summary)}{headline_cards(side.summary)}",
        )
        for label, side in zip(SIDES, (report.before, report.after), strict=True)
    ]
    return f'<div class="grid2">{"".join(sides)}</div>'


def _model(report: ProfileReport) -> str:
    return report.summary.model or "unknown model"


def compare_page(report: CompareReport) -> str:
    """The whole comparison page."""
    doc = _Doc(to_jsonable(report.comparison, (report.before.source, report.after.source)))
    toc: list[tuple[str, str]] = [
        ("runs", "runs"),
        ("deltas", "deltas"),
        ("phases", "phases"),
    ]
    moved_toc, moved = moved_block(doc)
    toc += [*moved_toc, ("verdicts", "verdicts")]
    content = "".join(
        [
            warnings_block(report, doc),
            section("runs", "The two runs", runs_block(report)),
            section(
                "deltas",
                "What changed",
                deltas_block(report, doc),
                intro="Before → after. A call needs --repeat trials on both sides; its "
                "arithmetic is shown under it.",
            ),
            section("phases", "Phases, before and after", phases_block(report, doc)),
            moved,
            section("verdicts", "Each side's verdict", verdicts_block(report)),
        ]
    )
    names = _names(report.before, report.after)
    subtitle = f"{esc(report.before.source)} → {esc(report.after.source)}"
    footer = (
        f"Made by libreyolo profile report from <code>{esc(report.before.source)}</code> and "
        f"<code>{esc(report.after.source)}</code>. Every number here is one that "
        "<code>libreyolo profile compare before after --json</code> prints (or, inside a "
        "side's block, <code>summary --json</code> for that side)."
    )
    return document(
        title=f"Comparison · {names}",
        subtitle=subtitle,
        toc=toc,
        body=content,
        footer=footer,
        inputs=[report.before.source, report.after.source],
    )


def _names(*sides: ProfileReport) -> str:
    models = [short_name(_model(s)) for s in sides]
    return models[0] if models[0] == models[1] else f"{models[0]} vs {models[1]}"
