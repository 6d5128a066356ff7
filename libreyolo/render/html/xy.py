"""The report's x-y chart as inline SVG: points on linear axes (x log2 when asked), a line
through each series, reference lines and a highlighted polyline (the Pareto front). Each point
is a mark (`svg.mark_attrs`: `data-mark`, `data-value`, `data-src`) with its tooltip; a point
may take another shape than a dot (a bound of the batch search: a cross, a triangle, a
diamond), a label above it (the order it was measured in) and a ring (the recommended one).

Pure: data in, SVG text out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from libreyolo.render.html.markup import Src, esc
from libreyolo.render.html.svg import (
    BOTTOM,
    DASHES,
    LEFT,
    PALETTE,
    RIGHT,
    TOP,
    Guide,
    fmt_tick,
    mark_attrs,
    nice_ticks,
    svg_root,
    y_axis,
)

# A point's shape: a dot, or a marker that stays apart from the dots in greyscale print.
SHAPES = ("circle", "cross", "triangle", "diamond")
RING = "#1d2330"  # the ring around a highlighted point: the page's ink
TICK_CHAR_PX = 7.0  # an x tick label's width per character at the charts' 11 px (and a gap)


@dataclass(frozen=True, slots=True)
class XYPoint:
    x: float
    y: float
    src: Src | None
    tip: str
    shape: str = "circle"  # one of SHAPES
    label: str = ""  # drawn above the point
    ring: bool = False  # highlighted


@dataclass(frozen=True, slots=True)
class XYSeries:
    label: str
    points: tuple[XYPoint, ...]
    connect: bool = True
    colour: str | None = None  # the palette's colour for its place when None


@dataclass(frozen=True, slots=True)
class XYChart:
    series: tuple[XYSeries, ...]
    x_label: str
    y_label: str
    log2_x: bool = False
    guides: tuple[Guide, ...] = ()
    front: tuple[tuple[float, float], ...] = ()  # a highlighted polyline (the Pareto front)
    x_ticks: tuple[float, ...] = field(default_factory=tuple)
    headroom: float = 1.0  # the y axis reaches at least this times the largest value (labels)
    # The y axis shows a value times this (a fraction as percent); a mark's `data-value` stays
    # the reader's own number.
    y_scale: float = 1.0


def _marker(p: XYPoint, x: float, y: float, colour: str, attrs: str) -> str:
    """One point's mark in its shape, with its ring and label."""
    title = f"<title>{esc(p.tip)}</title>"
    if p.shape == "cross":
        drawn = (
            f'<path {attrs} d="M{x - 4:.1f},{y - 4:.1f}l8,8m0,-8l-8,8" fill="none" '
            f'stroke="{colour}" stroke-width="2.5">{title}</path>'
        )
    elif p.shape == "triangle":
        drawn = (
            f'<path {attrs} d="M{x:.1f},{y - 5:.1f}l5,9h-10z" fill="{colour}" stroke="#fff" '
            f'stroke-width="1">{title}</path>'
        )
    elif p.shape == "diamond":
        drawn = (
            f'<path {attrs} d="M{x:.1f},{y - 5:.1f}l5,5l-5,5l-5,-5z" fill="#fff" '
            f'stroke="{colour}" stroke-width="2">{title}</path>'
        )
    else:
        drawn = (
            f'<circle {attrs} cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}" stroke="#fff" '
            f'stroke-width="1">{title}</circle>'
        )
    if p.ring:
        drawn = (
            f'<circle class="ring" cx="{x:.1f}" cy="{y:.1f}" r="8" fill="none" '
            f'stroke="{RING}" stroke-width="2"/>' + drawn
        )
    if p.label:
        above = y - (12 if p.ring else 8)
        drawn += f'<text class="order" x="{x:.1f}" y="{above:.1f}" text-anchor="middle">'
        drawn += f"{esc(p.label)}</text>"
    return drawn


def _x_labels(ticks: tuple[float, ...], px: Callable[[float], float], y: float) -> str:
    """The x tick labels, left to right, each one too close to the last one drawn left out
    (refined batches crowd a log axis: 32, 33, 34 sit a few pixels apart)."""
    parts, last_x, last_chars = [], -math.inf, 0
    for t in sorted(ticks):
        x, text = px(t), fmt_tick(t)
        if x - last_x < (last_chars + len(text)) / 2 * TICK_CHAR_PX + TICK_CHAR_PX:
            continue
        parts.append(f'<text x="{x:.1f}" y="{y}" text-anchor="middle">{text}</text>')
        last_x, last_chars = x, len(text)
    return "".join(parts)


def _series(
    chart: XYChart, mark: str, px: Callable[[float], float], py: Callable[[float], float]
) -> str:
    """Each series' line (when it connects) and its points, in x order, as marks of `mark`."""
    parts = []
    for i, s in enumerate(chart.series):
        c, dash = s.colour or PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)]
        ordered = sorted(s.points, key=lambda p: p.x)
        if s.connect and len(ordered) > 1:
            path = " ".join(f"{px(p.x):.1f},{py(p.y):.1f}" for p in ordered)
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"{dash_attr}/>'
            )
        for p in ordered:
            parts.append(_marker(p, px(p.x), py(p.y), c, mark_attrs(mark, p.y, p.src)))
    return "".join(parts)


def xy_chart(chart: XYChart, *, mark: str, width: int = 540, height: int = 300) -> str:
    """Points (and lines through each series) on linear axes, x log2 when asked."""
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM

    def fx(x: float) -> float:
        return math.log2(x) if chart.log2_x and x > 0 else x

    pts = [p for s in chart.series for p in s.points]
    xs = [fx(p.x) for p in pts] or [0.0, 1.0]
    ys = [p.y * chart.y_scale for p in pts] + [g.value * chart.y_scale for g in chart.guides]
    x_lo, x_hi = min(xs), max(xs)
    if x_hi <= x_lo:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    pad = (x_hi - x_lo) * 0.05
    x_lo, x_hi = x_lo - pad, x_hi + pad
    y_ticks = nice_ticks(0.0, max(ys, default=1.0) * chart.headroom or 1.0)
    y_max = y_ticks[-1]

    def px(x: float) -> float:
        return LEFT + (fx(x) - x_lo) / (x_hi - x_lo) * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - y * chart.y_scale / y_max * plot_h

    parts = [y_axis(y_ticks, y_max, plot_w, plot_h, chart.y_label)]
    parts.append(_x_labels(chart.x_ticks or tuple({p.x for p in pts}), px, TOP + plot_h + 14))
    parts.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle">'
        f"{esc(chart.x_label)}</text>"
    )
    for g in chart.guides:
        y = py(g.value)
        parts.append(
            f'<line class="guide" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y:.1f}" '
            f'y2="{y:.1f}" stroke="#D55E00" stroke-dasharray="6 3"/>'
            f'<text x="{LEFT + plot_w - 4}" y="{y - 4:.1f}" text-anchor="end" '
            f'fill="#D55E00">{esc(g.label)}</text>'
        )
    if len(chart.front) > 1:
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in chart.front)
        parts.append(
            f'<polyline class="front" points="{path}" fill="none" stroke="#000" '
            f'stroke-width="5" stroke-opacity="0.15" stroke-linejoin="round"/>'
        )
    parts.append(_series(chart, mark, px, py))
    return svg_root(width, height, "".join(parts), chart.y_label)
