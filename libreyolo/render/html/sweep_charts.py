"""The sweep page's three charts: img/s by batch, latency against img/s with the Pareto front,
peak memory by batch with the device's limit; one x-y series per (imgsz, AMP, threads).

A point is named in full once on its page (the points table); here it is its index in the
page's `data-points` list (`point_src`: `["summary", "points", 3, "metrics", "img_per_s"]`)
and, in tooltips and captions, its name cut short (`short_point`), so a sweep of long names
does not write each one a dozen times.

Pure: points in, SVG and HTML text out. The series, the front and the latency metric come from
`libreyolo.analysis.sweep`; nothing is computed here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.analysis.sweep import (
    Points,
    latency_metric,
    pareto_front,
    powers_of_two,
    series_label,
    series_names,
)
from libreyolo.render.html import svg, xy
from libreyolo.render.html.markup import Src, esc, num
from libreyolo.render.safe import short_name

if TYPE_CHECKING:
    from libreyolo.document.sweep_model import SweepRow

LATENCY_LABELS = {"latency_p50_ms": "latency p50 (ms)", "step_ms": "step time (ms)"}
CPU_MEMORY_LINE = (
    "Peak memory is measured on CUDA only: no point of this sweep recorded a peak VRAM."
)
GUIDE_RANGE = 4  # the memory limit is drawn when within four times the largest peak
SHORT_CHARS = 40  # a point's name in a tooltip, a link or a caption: head…tail past this
Index = dict[str, int]  # point name -> its place in the page's `data-points` list


def point_src(index: int, *keys: str) -> Src:
    """Where `summary <sweep dir> --json` prints a point's value: the point by its index."""
    return ("summary", "points", index, *keys)


def short_point(name: str) -> str:
    """A point's name for a tooltip, link or caption: escaped, cut to SHORT_CHARS."""
    return esc(short_name(name, SHORT_CHARS))


# The headline metrics a chart or a table cell draws, by name.
METRICS = ("img_per_s", "step_ms", "latency_p50_ms", "peak_vram_mb", "cpu_wait_frac")


def metric(entry: SweepRow, key: str) -> float | None:
    """A point's headline metric `key` (one of METRICS) as a number; None when it has none."""
    m = entry.metrics
    values = (m.img_per_s, m.step_ms, m.latency_p50_ms, m.peak_vram_mb, m.cpu_wait_frac)
    value = dict(zip(METRICS, values, strict=True))[key]
    return None if value is None else float(value)


def contended(entry: SweepRow) -> bool:
    """Whether the point was measured on a contended host."""
    return entry.metrics.contended is True


def _tip(name: str, entry: SweepRow, what: str) -> str:
    shown = short_name(name, SHORT_CHARS)  # esc() runs on the whole tip in svg.py
    return f"{shown}: {what}" + (" (measured on a contended host)" if contended(entry) else "")


def _series(
    points: Points, index: Index, y_key: str, fmt: str
) -> tuple[list[xy.XYSeries], list[str]]:
    """One x-y series per (imgsz, amp, threads): batch against `y_key`, the points with it."""
    out, labels = [], []
    for (imgsz, amp, threads), names in series_names(points).items():
        marks = []
        for n in names:
            y = metric(points[n], y_key)
            if y is not None:
                tip = _tip(n, points[n], fmt.format(y))
                src = point_src(index[n], "metrics", y_key)
                marks.append(xy.XYPoint(points[n].batch or 0, y, src, tip))
        if marks:
            out.append(xy.XYSeries(series_label(points, imgsz, amp, threads), tuple(marks)))
            labels.append(series_label(points, imgsz, amp, threads))
    return out, labels


def _log2(series: list[xy.XYSeries]) -> bool:
    return powers_of_two({int(p.x) for s in series for p in s.points})


def _figure(legend_labels: list[str], chart: str, caption: str, extra: str = "") -> str:
    return (
        f"<figure>{svg.series_legend(legend_labels)}{extra}{chart}"
        f"<figcaption>{caption}</figcaption></figure>"
    )


def throughput_chart(points: Points, index: Index) -> str:
    series, labels = _series(points, index, "img_per_s", "{:.1f} img/s")
    if not series:
        return '<p class="intro">No point finished with a throughput.</p>'
    chart = xy.XYChart(tuple(series), "batch", "img/s", log2_x=_log2(series))
    caption = "img/s by batch, one line per imgsz, AMP and thread count; failed points left out."
    return _figure(labels, xy.xy_chart(chart, mark="throughput", width=1100), esc(caption))


def tradeoff_chart(points: Points, index: Index) -> str:
    """Latency against img/s, one colour per series, the Pareto front drawn under them."""
    lat_key = latency_metric(points)
    pairs: dict[str, tuple[float, float]] = {}
    series, labels = [], []
    for (imgsz, amp, threads), names in series_names(points).items():
        marks = []
        for n in names:
            lat, ips = metric(points[n], lat_key), metric(points[n], "img_per_s")
            if lat is None or ips is None:
                continue
            pairs[n] = (lat, ips)
            tip = _tip(n, points[n], f"{lat:.2f} ms at {ips:.1f} img/s")
            marks.append(xy.XYPoint(ips, lat, point_src(index[n], "metrics", lat_key), tip))
        if marks:
            label = series_label(points, imgsz, amp, threads)
            series.append(xy.XYSeries(label, tuple(marks), connect=False))
            labels.append(label)
    if not series:
        return '<p class="intro">No point finished with both a latency and a throughput.</p>'
    front = pareto_front(pairs)
    chart = xy.XYChart(
        tuple(series),
        "img/s",
        LATENCY_LABELS[lat_key],
        front=tuple((pairs[n][1], pairs[n][0]) for n in front),
        x_ticks=ticks_within([ips for _, ips in pairs.values()]),
    )
    on_front = ", ".join(short_point(n) for n in front)
    caption = (
        f"Lower and further right is better. The grey band joins the Pareto front: the points "
        f"no other point beats on both latency and img/s ({on_front})."
    )
    drawn = xy.xy_chart(chart, mark="tradeoff", width=1100)
    return _figure(labels, drawn, caption)


def ticks_within(values: list[float]) -> tuple[float, ...]:
    """Round ticks inside the values' range (every distinct value would crowd 64 points);
    empty, so the chart ticks each value, when fewer than two round ones fit."""
    lo, hi = min(values), max(values)
    if hi - lo <= svg.MIN_TICK_SPREAD * max(abs(lo), abs(hi)):  # equal, or apart by rounding only
        return ()
    ticks = tuple(t for t in svg.nice_ticks(lo, hi) if lo <= t <= hi)
    return ticks if len(ticks) > 1 else ()


def memory_chart(points: Points, index: Index) -> str:
    series, labels = _series(points, index, "peak_vram_mb", "{:,.1f} MB peak")
    if not series:
        return f'<p class="intro">{esc(CPU_MEMORY_LINE)}</p>'
    limits: dict[float, str] = {}
    for name, entry in points.items():
        value = entry.device_memory_mb
        if entry.status == "ok" and value is not None:
            limits.setdefault(float(value), name)
    top = max(p.y for s in series for p in s.points)
    drawn = {mb: n for mb, n in limits.items() if mb <= GUIDE_RANGE * top}
    guides = tuple(svg.Guide(mb, "device memory") for mb in sorted(drawn))
    chart = xy.XYChart(
        tuple(series), "batch", "peak VRAM (MB)", log2_x=_log2(series), guides=guides
    )
    shown = " and ".join(
        num(mb, point_src(index[n], "device_memory_mb"), unit="MB")
        for mb, n in sorted(limits.items())
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
    return _figure(labels, xy.xy_chart(chart, mark="memory", width=1100), caption)
