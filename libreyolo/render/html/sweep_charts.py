"""The sweep page's charts: img/s by batch, MFU by batch, latency against img/s with the Pareto
front, J/img against img/s with its own front (where the points measured energy), peak memory by
batch with the device's limit; one x-y series per (imgsz, AMP, threads, exec mode).

A point is named in full once on its page (the points table); here it is its index in the
page's `data-points` list (`point_src`: `["summary", "points", 3, "metrics", "img_per_s"]`)
and, in tooltips and captions, its name cut short (`short_point`), so a sweep of long names
does not write each one a dozen times.

Pure: points in, SVG and HTML text out. The series, the front and the latency metric come from
`libreyolo.analysis.sweep`; nothing is computed here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from libreyolo.analysis.sweep import (
    Points,
    latency_metric,
    log2_axis,
    pareto_front,
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
METRICS = (
    "img_per_s",
    "step_ms",
    "latency_p50_ms",
    "peak_vram_mb",
    "cpu_wait_frac",
    "mfu",
    "energy_j_per_img",
)
# What an MFU is a share of, by the points' `peak_source`.
PEAK_WORDS: dict[tuple[str, ...], str] = {
    ("table",): "the datasheet's dense peak of the GPU in its math dtype",
    ("measured",): "the peak of a short GEMM measured on the device in its math dtype",
    ("measured", "table"): "the datasheet's dense peak where the GPU is in the table, else the "
    "GEMM peak measured on the device",
}
NO_MFU_LINE = (
    "No point has an MFU: its profile predates the FLOP count, or the count failed for this "
    "model (the profile's notes say why)."
)


def metric(entry: SweepRow, key: str) -> float | None:
    """A point's headline metric `key` (one of METRICS) as a number; None when it has none."""
    m = entry.metrics
    values = (
        m.img_per_s,
        m.step_ms,
        m.latency_p50_ms,
        m.peak_vram_mb,
        m.cpu_wait_frac,
        m.mfu,
        m.energy_j_per_img,
    )
    value = dict(zip(METRICS, values, strict=True))[key]
    return None if value is None else float(value)


def contended(entry: SweepRow) -> bool:
    """Whether the point was measured on a contended host."""
    return entry.metrics.contended is True


def _tip(name: str, entry: SweepRow, what: str) -> str:
    shown = short_name(name, SHORT_CHARS)  # esc() runs on the whole tip in svg.py
    return f"{shown}: {what}" + (" (measured on a contended host)" if contended(entry) else "")


def _series(
    points: Points, index: Index, y_key: str, show: Callable[[float], str]
) -> tuple[list[xy.XYSeries], list[str]]:
    """One x-y series per (imgsz, amp, threads, exec): batch against `y_key`, the points with it
    (`show` writes a value for its tooltip)."""
    out, labels = [], []
    for key, names in series_names(points).items():
        marks = []
        for n in names:
            y = metric(points[n], y_key)
            if y is not None:
                tip = _tip(n, points[n], show(y))
                src = point_src(index[n], "metrics", y_key)
                marks.append(xy.XYPoint(points[n].batch or 0, y, src, tip))
        if marks:
            out.append(xy.XYSeries(series_label(points, key), tuple(marks)))
            labels.append(series_label(points, key))
    return out, labels


def _log2(series: list[xy.XYSeries]) -> bool:
    return log2_axis({int(p.x) for s in series for p in s.points})


def _figure(legend_labels: list[str], chart: str, caption: str, extra: str = "") -> str:
    return (
        f"<figure>{svg.series_legend(legend_labels)}{extra}{chart}"
        f"<figcaption>{caption}</figcaption></figure>"
    )


def throughput_chart(points: Points, index: Index) -> str:
    series, labels = _series(points, index, "img_per_s", "{:.1f} img/s".format)
    if not series:
        return '<p class="intro">No point finished with a throughput.</p>'
    chart = xy.XYChart(tuple(series), "batch", "img/s", log2_x=_log2(series))
    caption = "img/s by batch, one line per imgsz, AMP and thread count; failed points left out."
    return _figure(labels, xy.xy_chart(chart, mark="throughput", width=1100), esc(caption))


def mfu_chart(points: Points, index: Index) -> str:
    """MFU (percent, from 0) against batch, one line per series."""
    series, labels = _series(points, index, "mfu", lambda y: f"{y * 100:.3g} % MFU")
    if not series:
        return f'<p class="intro">{esc(NO_MFU_LINE)}</p>'
    chart = xy.XYChart(tuple(series), "batch", "MFU (%)", log2_x=_log2(series), y_scale=100.0)
    sources = tuple(
        sorted({str(e.metrics.peak_source) for e in points.values() if e.metrics.mfu is not None})
    )
    peak = PEAK_WORDS.get(sources, "the peak each profile names")
    caption = (
        "MFU by batch: the model FLOPs each point ran per second (FLOPs per image × img/s) as "
        f"a share of {peak}; failed points and points without an MFU left out."
    )
    return _figure(labels, xy.xy_chart(chart, mark="mfu", width=1100), esc(caption))


def _front_chart(
    points: Points, index: Index, cost_key: str, y_label: str, mark: str, unit: str
) -> tuple[list[str], str, list[str]] | None:
    """A cost (`cost_key` in `unit`, y: lower is better) against img/s (x), one colour per
    series, the Pareto front drawn under them: the legend's labels, the SVG and the front's
    names; None when no point has both."""
    pairs: dict[str, tuple[float, float]] = {}
    series, labels = [], []
    for key, names in series_names(points).items():
        marks = []
        for n in names:
            cost, ips = metric(points[n], cost_key), metric(points[n], "img_per_s")
            if cost is None or ips is None:
                continue
            pairs[n] = (cost, ips)
            tip = _tip(n, points[n], f"{cost:.3g} {unit} at {ips:.1f} img/s")
            marks.append(xy.XYPoint(ips, cost, point_src(index[n], "metrics", cost_key), tip))
        if marks:
            label = series_label(points, key)
            series.append(xy.XYSeries(label, tuple(marks), connect=False))
            labels.append(label)
    if not series:
        return None
    front = pareto_front(pairs)
    chart = xy.XYChart(
        tuple(series),
        "img/s",
        y_label,
        front=tuple((pairs[n][1], pairs[n][0]) for n in front),
        x_ticks=ticks_within([ips for _, ips in pairs.values()]),
    )
    return labels, xy.xy_chart(chart, mark=mark, width=1100), front


def tradeoff_chart(points: Points, index: Index) -> str:
    """Latency against img/s, one colour per series, the Pareto front drawn under them."""
    lat_key = latency_metric(points)
    drawn = _front_chart(points, index, lat_key, LATENCY_LABELS[lat_key], "tradeoff", "ms")
    if drawn is None:
        return '<p class="intro">No point finished with both a latency and a throughput.</p>'
    labels, chart, front = drawn
    on_front = ", ".join(short_point(n) for n in front)
    caption = (
        f"Lower and further right is better. The grey band joins the Pareto front: the points "
        f"no other point beats on both latency and img/s ({on_front})."
    )
    return _figure(labels, chart, caption)


def energy_chart(points: Points, index: Index) -> str | None:
    """J/img against img/s with its Pareto front; None when no point measured its energy."""
    drawn = _front_chart(points, index, "energy_j_per_img", "J/img", "energy", "J/img")
    if drawn is None:
        return None
    labels, chart, front = drawn
    on_front = ", ".join(short_point(n) for n in front)
    caption = (
        "Lower and further right is better: fewer joules per image at more images per second. "
        "The grey band joins the Pareto front, the points no other point beats on both "
        f"({on_front}). The energy is the GPU's own (NVML's counter over the measured window); "
        "points without a reading are left out."
    )
    return _figure(labels, chart, caption)


def ticks_within(values: list[float]) -> tuple[float, ...]:
    """Round ticks inside the values' range (every distinct value would crowd 64 points);
    empty, so the chart ticks each value, when fewer than two round ones fit."""
    lo, hi = min(values), max(values)
    if hi - lo <= svg.MIN_TICK_SPREAD * max(abs(lo), abs(hi)):  # equal, or apart by rounding only
        return ()
    ticks = tuple(t for t in svg.nice_ticks(lo, hi) if lo <= t <= hi)
    return ticks if len(ticks) > 1 else ()


def memory_chart(points: Points, index: Index) -> str:
    series, labels = _series(points, index, "peak_vram_mb", "{:,.1f} MB peak".format)
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
