"""The sweep page: one sweep folder's report (`libreyolo profile report <sweep dir>`, and the
`sweep.html` every `libreyolo-sweep` leaves beside `sweep.json`).

Reads the `SweepReport` (the sweep record as `summary <sweep dir> --json` prints it, and the ok
points' profile reports) and lays it out: the counts and the recommended point per imgsz, three
charts (img/s by batch, latency against img/s with the Pareto front, peak memory by batch with
the device's limit), the table of every point with the reason of each one that did not finish,
then each ok point's verdict, headline numbers and per-step time, collapsed. Numbers of the
record carry `["summary", "points", <name>, ...]`; a point's own section is scoped to its
profile, so its numbers are those `summary`/`phases <profile> --json` print.

Pure: a report in, HTML text out. The series, the front and the latency metric come from
`libreyolo.analysis.sweep`; nothing is computed here.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from libreyolo.analysis.report import ProfileReport, SweepReport
from libreyolo.analysis.sweep import (
    by_throughput,
    latency_metric,
    pareto_front,
    powers_of_two,
    series_label,
    series_names,
)
from libreyolo.render.html import svg
from libreyolo.render.html.markup import (
    Column,
    Src,
    card,
    cards,
    esc,
    num,
    scope,
    section,
    table,
)
from libreyolo.render.html.page import document
from libreyolo.render.html.profile_page import (
    headline_cards,
    phase_table,
    steps_chart,
    verdict_block,
)

LATENCY_LABELS = {"latency_p50_ms": "latency p50 (ms)", "step_ms": "step time (ms)"}
CPU_MEMORY_LINE = (
    "Peak memory is measured on CUDA only: no point of this sweep recorded a peak VRAM."
)
# A point's per-step chart costs ~300 bytes a mark: past this many steps (a long window) its
# section shows the phase table instead, so 64 points stay well under 3 MB.
MAX_STEPS_DRAWN = 24
GUIDE_RANGE = 4  # the memory limit is drawn when within four times the largest peak
Points = dict[str, dict[str, Any]]


def _src(name: str, *keys: str) -> Src:
    return ("summary", "points", name, *keys)


def _metric(entry: dict[str, Any], key: str) -> float | None:
    metrics = entry.get("metrics")
    value = metrics.get(key) if isinstance(metrics, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _anchors(points: Points) -> dict[str, str]:
    """Each point's section id (names hold `/` and anything else a folder name may)."""
    return {name: f"point-{i}" for i, name in enumerate(by_throughput(points))}


def overview(record: dict[str, Any], anchors: dict[str, str]) -> str:
    """The counts and the recommended point per imgsz."""
    points: Points = record["points"]
    counts = [
        ("points", "num_points"),
        ("ok", "num_ok"),
        ("failed", "num_failed"),
        ("interrupted", "num_interrupted"),
        ("missing", "num_missing"),
        ("reused", "num_reused"),
    ]
    items = [card(label, num(record.get(key), ("summary", key), digits=0)) for label, key in counts]
    best = []
    for imgsz, name in (record.get("recommended") or {}).items():
        entry = points.get(name, {})
        ips = num(_metric(entry, "img_per_s"), _src(name, "metrics", "img_per_s"), unit="img/s")
        link = f'<a href="#{anchors[name]}">{esc(name)}</a>' if name in anchors else esc(name)
        best.append(f"<li>imgsz {esc(imgsz)}: <b>{link}</b> · {ips}</li>")
    recommended = (
        f'<h3>Recommended per imgsz</h3><ul class="notes">{"".join(best)}</ul>'
        '<p class="intro">The trusted point (no memory thrash, quiet host) with the highest '
        "img/s.</p>"
        if best
        else '<p class="intro">No point can be recommended: none finished on a quiet host '
        "without memory thrash.</p>"
    )
    return cards(items) + recommended


def _tip(name: str, entry: dict[str, Any], what: str) -> str:
    contended = (entry.get("metrics") or {}).get("contended") is True
    return f"{name}: {what}" + (" (measured on a contended host)" if contended else "")


def _series(points: Points, y_key: str, fmt: str) -> tuple[list[svg.XYSeries], list[str]]:
    """One x-y series per (imgsz, amp, threads): batch against `y_key`, the points with it."""
    out, labels = [], []
    for (imgsz, amp, threads), names in series_names(points).items():
        marks = []
        for n in names:
            y = _metric(points[n], y_key)
            if y is not None:
                tip = _tip(n, points[n], fmt.format(y))
                marks.append(svg.XYPoint(points[n]["batch"], y, _src(n, "metrics", y_key), tip))
        if marks:
            out.append(svg.XYSeries(series_label(points, imgsz, amp, threads), tuple(marks)))
            labels.append(series_label(points, imgsz, amp, threads))
    return out, labels


def _log2(series: list[svg.XYSeries]) -> bool:
    return powers_of_two({int(p.x) for s in series for p in s.points})


def _figure(legend_labels: list[str], chart: str, caption: str, extra: str = "") -> str:
    return (
        f"<figure>{svg.series_legend(legend_labels)}{extra}{chart}"
        f"<figcaption>{caption}</figcaption></figure>"
    )


def throughput_chart(points: Points) -> str:
    series, labels = _series(points, "img_per_s", "{:.1f} img/s")
    if not series:
        return '<p class="intro">No point finished with a throughput.</p>'
    chart = svg.XYChart(tuple(series), "batch", "img/s", log2_x=_log2(series))
    caption = "img/s by batch, one line per imgsz, AMP and thread count; failed points left out."
    return _figure(labels, svg.xy_chart(chart, mark="throughput", width=1100), esc(caption))


def tradeoff_chart(points: Points) -> str:
    """Latency against img/s, one colour per series, the Pareto front drawn under them."""
    lat_key = latency_metric(points)
    pairs: dict[str, tuple[float, float]] = {}
    series, labels = [], []
    for (imgsz, amp, threads), names in series_names(points).items():
        marks = []
        for n in names:
            lat, ips = _metric(points[n], lat_key), _metric(points[n], "img_per_s")
            if lat is None or ips is None:
                continue
            pairs[n] = (lat, ips)
            tip = _tip(n, points[n], f"{lat:.2f} ms at {ips:.1f} img/s")
            marks.append(svg.XYPoint(ips, lat, _src(n, "metrics", lat_key), tip))
        if marks:
            label = series_label(points, imgsz, amp, threads)
            series.append(svg.XYSeries(label, tuple(marks), connect=False))
            labels.append(label)
    if not series:
        return '<p class="intro">No point finished with both a latency and a throughput.</p>'
    front = pareto_front(pairs)
    chart = svg.XYChart(
        tuple(series),
        "img/s",
        LATENCY_LABELS[lat_key],
        front=tuple((pairs[n][1], pairs[n][0]) for n in front),
        x_ticks=_ticks_within([ips for _, ips in pairs.values()]),
    )
    on_front = ", ".join(esc(n) for n in front)
    caption = (
        f"Lower and further right is better. The grey band joins the Pareto front: the points "
        f"no other point beats on both latency and img/s ({on_front})."
    )
    drawn = svg.xy_chart(chart, mark="tradeoff", width=1100)
    return _figure(labels, drawn, caption)


def _ticks_within(values: list[float]) -> tuple[float, ...]:
    """Round ticks inside the values' range (every distinct value would crowd 64 points);
    empty, so the chart ticks each value, when fewer than two round ones fit."""
    lo, hi = min(values), max(values)
    ticks = tuple(t for t in svg.nice_ticks(lo, hi) if lo <= t <= hi)
    return ticks if len(ticks) > 1 else ()


def memory_chart(points: Points) -> str:
    series, labels = _series(points, "peak_vram_mb", "{:,.1f} MB peak")
    if not series:
        return f'<p class="intro">{esc(CPU_MEMORY_LINE)}</p>'
    limits: dict[float, str] = {}
    for name, entry in points.items():
        value = entry.get("device_memory_mb")
        if entry.get("status") == "ok" and isinstance(value, int | float):
            limits.setdefault(float(value), name)
    top = max(p.y for s in series for p in s.points)
    drawn = {mb: n for mb, n in limits.items() if mb <= GUIDE_RANGE * top}
    guides = tuple(svg.Guide(mb, "device memory") for mb in sorted(drawn))
    chart = svg.XYChart(
        tuple(series), "batch", "peak VRAM (MB)", log2_x=_log2(series), guides=guides
    )
    shown = " and ".join(
        num(mb, _src(n, "device_memory_mb"), unit="MB") for mb, n in sorted(limits.items())
    )
    if not limits:
        caption = "Peak VRAM by batch; the profiles do not record the device's memory."
    elif drawn == limits:
        caption = f"Peak VRAM by batch; the dashed line is the device's memory ({shown})."
    else:  # a far-off line would flatten every point onto the axis
        caption = (
            f"Peak VRAM by batch. The device's memory ({shown}) is over four times the largest "
            "peak, so its line is left off the chart: every point fits with room to spare."
        )
    return _figure(labels, svg.xy_chart(chart, mark="memory", width=1100), caption)


TABLE_COLUMNS = (
    Column("point", numeric=False),
    Column("batch"),
    Column("imgsz"),
    Column("amp", numeric=False),
    Column("threads", hint="none: torch's default"),
    Column("status", numeric=False),
    Column("img/s"),
    Column("step ms"),
    Column("latency p50 ms"),
    Column("peak VRAM MB"),
    Column("CPU wait %", hint="share of runnable time spent waiting for a CPU"),
    Column("verdict", numeric=False, hint="the verdict, or why the point did not finish"),
)
METRIC_CELLS = (("img_per_s", 1), ("step_ms", 2), ("latency_p50_ms", 2), ("peak_vram_mb", 1))


def _tags(name: str, entry: dict[str, Any], best: set[str], front: set[str]) -> str:
    metrics = entry.get("metrics") or {}
    tags = [
        ("ok", "recommended", name in best),
        ("", "Pareto", name in front),
        ("bad", "contended", metrics.get("contended") is True),
        ("bad", "thrash", bool(metrics.get("memory_pressure"))),
        ("", "reused", entry.get("reused") is True),
    ]
    return "".join(f'<span class="tag {cls}">{text}</span>' for cls, text, on in tags if on)


def _int_cell(entry: dict[str, Any], name: str, key: str) -> str:
    value = entry.get(key)
    return num(value, _src(name, key), digits=0) if value is not None else "–"


def _why(entry: dict[str, Any]) -> str:
    reason = entry.get("reason") or "no reason recorded"
    code = entry.get("code")
    return esc(f"{code}: {reason}" if code else reason)


def points_table(report: SweepReport, anchors: dict[str, str], front: set[str]) -> str:
    points: Points = report.record["points"]
    best = set((report.record.get("recommended") or {}).values())
    rows, keys, classes = [], [], []
    for name in by_throughput(points):
        entry = points[name]
        ok = entry.get("status") == "ok"
        label = f'<a href="#{anchors[name]}">{esc(name)}</a>' if ok else esc(name)
        cells = [
            label + _tags(name, entry, best, front),
            _int_cell(entry, name, "batch"),
            _int_cell(entry, name, "imgsz"),
            "–" if entry.get("amp") is None else ("on" if entry.get("amp") else "off"),
            _int_cell(entry, name, "threads"),
            esc(entry.get("status")),
        ]
        key: list[object] = [
            name,
            entry.get("batch"),
            entry.get("imgsz"),
            str(entry.get("amp")),
            entry.get("threads"),
            entry.get("status"),
        ]
        for metric, digits in METRIC_CELLS:
            value = _metric(entry, metric)
            cells.append(num(value, _src(name, "metrics", metric), digits=digits))
            key.append(value)
        wait = _metric(entry, "cpu_wait_frac")
        cells.append(num(wait, _src(name, "metrics", "cpu_wait_frac"), scale=100))
        key.append(wait)
        cells.append(esc(entry.get("verdict") or "–") if ok else _why(entry))
        key.append(entry.get("verdict") if ok else entry.get("reason"))
        rows.append(cells)
        keys.append(key)
        classes.append("best" if name in best else ("" if ok else "bad"))
    return table(TABLE_COLUMNS, rows, sort_keys=keys, row_classes=classes)


def profile_input(report: SweepReport, name: str) -> str:
    """Where point `name`'s profile lies now: its recorded path rebased from the recorded sweep
    folder onto the page's (as `read_point_profiles` reads it)."""
    recorded = PurePath(str(report.record["points"][name].get("profile")))
    root = report.record.get("sweep_dir")
    if isinstance(root, str) and recorded.is_relative_to(root):
        recorded = recorded.relative_to(root)
    return str(PurePath(report.source) / recorded)


def point_section(report: SweepReport, name: str, point: ProfileReport) -> str:
    """One ok point, collapsed: its verdict, headline numbers and per-step time."""
    s = point.summary
    head = (
        f"<summary>{esc(name)} · {num(s.metrics.get('img_per_s'), ('summary', 'img_per_s'))}"
        f'<span class="unit">img/s</span> · {esc(s.verdict.bound)}</summary>'
    )
    steps = point.phases.per_step
    if len(steps) <= MAX_STEPS_DRAWN:
        detail = steps_chart(steps)
    else:
        measured = num(s.run.num_measured, ("summary", "run", "window", "num_measured"), digits=0)
        detail = (
            f'<p class="intro">{measured} measured steps, more than a sweep page draws per '
            "point: the per-step chart is on the point's own page (<code>libreyolo profile "
            "report</code> on its profile). The phases:</p>" + phase_table(point)
        )
    inner = verdict_block(s) + headline_cards(s) + detail
    return scope([profile_input(report, name)], head + inner, tag="details")


def point_sections(report: SweepReport, anchors: dict[str, str]) -> str:
    points: Points = report.record["points"]
    parts = []
    for name in by_throughput(points):
        if points[name].get("status") != "ok":
            continue
        if name in report.points:
            body = point_section(report, name, report.points[name])
        else:
            reason = report.unreadable.get(name, "its profile was not read")
            body = (
                f"<details><summary>{esc(name)} · profile unreadable</summary>"
                f'<p class="intro">{esc(reason)}</p></details>'
            )
        parts.append(f'<div id="{anchors[name]}">{body}</div>')
    if not parts:
        return '<p class="intro">No point finished.</p>'
    return "".join(parts)


def _model(report: SweepReport) -> str | None:
    return next((p.summary.model for p in report.points.values() if p.summary.model), None)


def sweep_page(report: SweepReport) -> str:
    """The whole page for one sweep."""
    record = report.record
    points: Points = record["points"]
    anchors = _anchors(points)
    lat_key = latency_metric(points)
    pairs = {
        n: (lat, ips)
        for n, e in points.items()
        if e.get("status") == "ok"
        and (lat := _metric(e, lat_key)) is not None
        and (ips := _metric(e, "img_per_s")) is not None
    }
    front = set(pareto_front(pairs))
    toc = [
        ("overview", "overview"),
        ("throughput", "throughput"),
        ("tradeoff", "latency vs throughput"),
        ("memory", "memory"),
        ("table", "points"),
        ("sections", "each point"),
    ]
    content = "".join(
        [
            section("overview", "Overview", overview(record, anchors)),
            section("throughput", "Throughput by batch", throughput_chart(points)),
            section("tradeoff", "Latency against throughput", tradeoff_chart(points)),
            section("memory", "Peak memory by batch", memory_chart(points)),
            section(
                "table",
                "Every point",
                points_table(report, anchors, front),
                intro="By img/s; click a heading to sort. Points that did not finish say why.",
            ),
            section(
                "sections",
                "Each point",
                point_sections(report, anchors),
                intro="Open a point for its verdict and per-step time; <code>libreyolo profile "
                "report</code> on its profile gives its full page.",
            ),
        ]
    )
    subtitle = f"<code>{esc(report.source)}</code>"  # the counts lead the page, as numbers
    model = _model(report)
    footer = (
        f"Made by libreyolo profile report from <code>{esc(report.source)}</code>. Every number "
        "outside a point's section is one that <code>libreyolo profile summary &lt;sweep dir&gt; "
        "--json</code> prints; inside it, one that <code>summary|phases &lt;profile&gt; "
        "--json</code> prints for that point's profile."
    )
    return document(
        title=f"Sweep · {model}" if model else "Sweep",
        subtitle=subtitle,
        toc=toc,
        body=content,
        footer=footer,
        inputs=[report.source],
    )
