"""The report's x-y chart as inline SVG: points on linear axes (x log2 when asked), a line
through each series, reference lines and a highlighted polyline (the Pareto front). Each point
is a mark (`svg.mark_attrs`: `data-mark`, `data-value`, `data-src`) with its tooltip.

Pure: data in, SVG text out.
"""

from __future__ import annotations

import math
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


@dataclass(frozen=True, slots=True)
class XYPoint:
    x: float
    y: float
    src: Src | None
    tip: str


@dataclass(frozen=True, slots=True)
class XYSeries:
    label: str
    points: tuple[XYPoint, ...]
    connect: bool = True


@dataclass(frozen=True, slots=True)
class XYChart:
    series: tuple[XYSeries, ...]
    x_label: str
    y_label: str
    log2_x: bool = False
    guides: tuple[Guide, ...] = ()
    front: tuple[tuple[float, float], ...] = ()  # a highlighted polyline (the Pareto front)
    x_ticks: tuple[float, ...] = field(default_factory=tuple)


def xy_chart(chart: XYChart, *, mark: str, width: int = 540, height: int = 300) -> str:
    """Points (and lines through each series) on linear axes, x log2 when asked."""
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM

    def fx(x: float) -> float:
        return math.log2(x) if chart.log2_x and x > 0 else x

    pts = [p for s in chart.series for p in s.points]
    xs = [fx(p.x) for p in pts] or [0.0, 1.0]
    ys = [p.y for p in pts] + [g.value for g in chart.guides]
    x_lo, x_hi = min(xs), max(xs)
    if x_hi <= x_lo:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    pad = (x_hi - x_lo) * 0.05
    x_lo, x_hi = x_lo - pad, x_hi + pad
    y_ticks = nice_ticks(0.0, max(ys, default=1.0) or 1.0)
    y_max = y_ticks[-1]

    def px(x: float) -> float:
        return LEFT + (fx(x) - x_lo) / (x_hi - x_lo) * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - y / y_max * plot_h

    parts = [y_axis(y_ticks, y_max, plot_w, plot_h, chart.y_label)]
    x_ticks = chart.x_ticks or tuple(sorted({p.x for p in pts}))
    for t in x_ticks:
        parts.append(
            f'<text x="{px(t):.1f}" y="{TOP + plot_h + 14}" text-anchor="middle">'
            f"{fmt_tick(t)}</text>"
        )
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
    for i, s in enumerate(chart.series):
        c, dash = PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)]
        ordered = sorted(s.points, key=lambda p: p.x)
        if s.connect and len(ordered) > 1:
            path = " ".join(f"{px(p.x):.1f},{py(p.y):.1f}" for p in ordered)
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"{dash_attr}/>'
            )
        for p in ordered:
            parts.append(
                f'<circle {mark_attrs(mark, p.y, p.src)} cx="{px(p.x):.1f}" cy="{py(p.y):.1f}" '
                f'r="4" fill="{c}" stroke="#fff" stroke-width="1">'
                f"<title>{esc(p.tip)}</title></circle>"
            )
    return svg_root(width, height, "".join(parts), chart.y_label)
