"""The report's charts as inline SVG: stacked columns, horizontal bars, a share bar, a histogram,
and the primitives every chart shares (the y axis, the root element, a mark's attributes; the
x-y chart is `xy.py`). Each data mark is an element with `class="mark"`, `data-mark` naming its
chart, the number it draws in `data-value` (and `data-src`, the reader JSON path holding it) and
a `<title>` the browser shows as a tooltip, without any script.

Charts scale with the page (`viewBox`, width 100 %); colours come in a fixed order from the
Okabe-Ito palette and lines also differ in dash, so the series stay apart in greyscale print.

Pure: data in, SVG text out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from libreyolo.document import phases
from libreyolo.render.html.markup import Src, attr_src, esc

# Yellow last: it is the palette's faintest line on white.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442")
DASHES = ("", "6 3", "2 3", "8 3 2 3", "1 2", "10 4")
GREY = "#9aa3b2"
FONT_PX = 11
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 14, 40  # plot margins, px
# Round ticks need values this far apart relative to their size: closer ones (a last-bit
# difference) would make the tick step smaller than the floats can tell apart, and the tick
# loop would never pass the top. Such a range is widened to this share of the values' size.
MIN_TICK_SPREAD = 1e-9
WIDENED_SPREAD = 1e-6
# Phases keep one colour on every page (training and inference phase names do not collide).
PHASE_COLOURS = {
    phases.DATALOAD: "#E69F00",
    phases.FORWARD: "#0072B2",
    phases.LOSS: "#CC79A7",
    phases.BACKWARD: "#009E73",
    phases.OPTIMIZER: "#D55E00",
    phases.PREPROCESS: "#56B4E9",
    phases.TO_DEVICE: "#56B4E9",
    phases.POSTPROCESS: "#F0E442",
    "other": GREY,
    phases.UNPHASED: GREY,
    "collective wait": "#3b3b3b",  # a multi-process run's ranks (`world_card.py`)
}


def colour(key: str, index: int) -> str:
    """A phase's own colour, else the palette's `index`-th."""
    return PHASE_COLOURS.get(key, PALETTE[index % len(PALETTE)])


def fmt_tick(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10 or value == int(value):
        return f"{value:.0f}"
    return f"{value:.2g}" if abs(value) < 1 else f"{value:.1f}"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering lo..hi (1, 2 or 5 times a power of ten apart); equal values
    (or values apart by a rounding only) get a range of their own around them."""
    size = max(abs(lo), abs(hi))
    if not hi - lo > MIN_TICK_SPREAD * size:  # a step that small: floats could not tell it apart
        hi = lo + max(1.0, size * WIDENED_SPREAD)
    raw = (hi - lo) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    value = start
    while value <= hi + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < hi:
        ticks.append(round(value, 10))
    return ticks


def svg_root(width: int, height: int, body: str, label: str) -> str:
    # Never drawn larger than designed: text stays 11 px in a wide column.
    return (
        f'<svg viewBox="0 0 {width} {height}" style="max-width:{width}px" role="img" '
        f'aria-label="{esc(label)}">{body}</svg>'
    )


def mark_attrs(mark: str, value: float, src: Src | None) -> str:
    where = f" {attr_src(src)}" if src is not None else ""
    return f'class="mark" data-mark="{esc(mark)}" data-value="{value!r}"{where}'


@dataclass(frozen=True, slots=True)
class Segment:
    key: str  # the series (a phase)
    value: float
    src: Src | None
    tip: str


@dataclass(frozen=True, slots=True)
class StackedColumn:
    label: str
    segments: tuple[Segment, ...]
    faded: bool = False  # drawn lighter (unsynced steps: one wall time, no split)
    flag: str = ""  # a marker above the column (outliers): its tooltip


def stacked_columns(
    columns: Sequence[StackedColumn],
    keys: Sequence[str],
    *,
    mark: str,
    y_label: str,
    height: int = 260,
    width: int = 1100,
) -> str:
    """Columns stacked by `keys` (in that order, bottom up), one per entry of `columns`."""
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM
    top = max((sum(s.value for s in c.segments) for c in columns), default=0.0)
    ticks = nice_ticks(0.0, top or 1.0)
    y_max = ticks[-1]
    slot = plot_w / max(len(columns), 1)
    bar_w = max(min(slot * 0.78, 40.0), 1.0)
    parts = [y_axis(ticks, y_max, plot_w, plot_h, y_label)]
    order = {k: i for i, k in enumerate(keys)}
    label_every = max(1, math.ceil(len(columns) / 30))
    for i, col in enumerate(columns):
        x = LEFT + i * slot + (slot - bar_w) / 2
        y = float(TOP + plot_h)
        for seg in sorted(col.segments, key=lambda s: order.get(s.key, len(order))):
            h = seg.value / y_max * plot_h
            y -= h
            fill = GREY if col.faded else colour(seg.key, order.get(seg.key, 0))
            opacity = ' fill-opacity="0.55"' if col.faded else ""
            parts.append(
                f'<rect {mark_attrs(mark, seg.value, seg.src)} x="{x:.1f}" y="{y:.1f}" '
                f'width="{bar_w:.1f}" height="{max(h, 0.5):.1f}" fill="{fill}"{opacity}>'
                f"<title>{esc(seg.tip)}</title></rect>"
            )
        if col.flag:
            parts.append(
                f'<path class="flag" d="M{x + bar_w / 2:.1f},{y - 3:.1f} l-4,-7 h8 z" '
                f'fill="#D55E00"><title>{esc(col.flag)}</title></path>'
            )
        if i % label_every == 0:
            parts.append(
                f'<text x="{x + bar_w / 2:.1f}" y="{TOP + plot_h + 14}" '
                f'text-anchor="middle">{esc(col.label)}</text>'
            )
    return svg_root(width, height, "".join(parts), y_label)


def y_axis(ticks: list[float], y_max: float, plot_w: float, plot_h: float, label: str) -> str:
    parts = ['<g class="grid">']
    for t in ticks:
        y = TOP + plot_h - t / y_max * plot_h
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w:.1f}" y1="{y:.1f}" y2="{y:.1f}"/>')
    parts.append('</g><g class="axis">')
    for t in ticks:
        y = TOP + plot_h - t / y_max * plot_h
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{fmt_tick(t)}</text>')
    parts.append(
        f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + plot_h:.1f}"/>'
        f'<line x1="{LEFT}" x2="{LEFT + plot_w:.1f}" y1="{TOP + plot_h:.1f}" '
        f'y2="{TOP + plot_h:.1f}"/>'
        f'<text transform="translate(14,{TOP + plot_h / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle">{esc(label)}</text></g>'
    )
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class Bar:
    value: float
    src: Src | None
    tip: str
    colour: str = PALETTE[0]
    text: str = ""  # the value as printed right of the bar


@dataclass(frozen=True, slots=True)
class BarRow:
    label: str
    bars: tuple[Bar, ...]  # one bar, or several side by side (before/after)


def hbars(
    rows: Sequence[BarRow], *, mark: str, label: str, width: int = 540, label_w: int = 150
) -> str:
    """Horizontal bars, one row per entry, scaled to the largest value."""
    per_bar, gap = 14, 8
    top = max((b.value for r in rows for b in r.bars), default=0.0) or 1.0
    plot_w = width - label_w - 120  # room for the value printed after the longest bar
    parts, y = [], 4.0
    for row in rows:
        row_h = per_bar * len(row.bars)
        parts.append(
            f'<text x="{label_w - 6}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end">'
            f"{esc(_clip(row.label, 24))}<title>{esc(row.label)}</title></text>"
        )
        for bar in row.bars:
            w = max(bar.value / top * plot_w, 0.5 if bar.value > 0 else 0.0)
            parts.append(
                f'<rect {mark_attrs(mark, bar.value, bar.src)} x="{label_w}" y="{y + 1:.1f}" '
                f'width="{w:.1f}" height="{per_bar - 2}" rx="2" fill="{bar.colour}">'
                f"<title>{esc(bar.tip)}</title></rect>"
            )
            if bar.text:
                parts.append(
                    f'<text x="{label_w + w + 5:.1f}" y="{y + per_bar - 3:.1f}">'
                    f"{esc(bar.text)}</text>"
                )
            y += per_bar
        y += gap
    return svg_root(width, int(y) + 2, "".join(parts), label)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Guide:
    """A reference line: horizontal in an x-y chart (a device's memory limit), vertical in a
    histogram (a latency percentile)."""

    value: float
    label: str


def share_bar(segments: Sequence[Segment], *, mark: str, width: int = 1100) -> str:
    """One horizontal bar split by `segments` in proportion to their values, each labelled
    inside when it is wide enough (all are named in their tooltips)."""
    height, bar_h = 34, 26
    total = sum(seg.value for seg in segments) or 1.0
    parts, x = [], 0.0
    for i, seg in enumerate(segments):
        w = seg.value / total * width
        fill = colour(seg.key, i)
        parts.append(
            f'<rect {mark_attrs(mark, seg.value, seg.src)} x="{x:.1f}" y="2" '
            f'width="{max(w, 0.5):.1f}" height="{bar_h}" fill="{fill}">'
            f"<title>{esc(seg.tip)}</title></rect>"
        )
        label = f"{seg.key} {seg.value / total:.0%}"
        if w >= 7 * len(label):
            ink = "#1d2330" if fill in LIGHT else "#ffffff"
            parts.append(
                f'<text x="{x + 6:.1f}" y="{2 + bar_h / 2 + 4:.1f}" fill="{ink}" '
                f'style="fill:{ink}">{esc(label)}</text>'
            )
        x += w
    return svg_root(width, height, "".join(parts), "share of the step by phase")


LIGHT = frozenset({"#F0E442", "#56B4E9", "#E69F00", GREY})  # fills that take dark text


@dataclass(frozen=True, slots=True)
class HistBin:
    lo: float
    hi: float
    count: int
    src: Src | None


def histogram(
    bins: Sequence[HistBin],
    guides: Sequence[Guide],
    *,
    mark: str,
    x_label: str,
    width: int = 540,
    height: int = 260,
) -> str:
    """Counts per bin on a linear x axis, with vertical guides (percentiles)."""
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM
    lo = min((b.lo for b in bins), default=0.0)
    hi = max((b.hi for b in bins), default=1.0)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    y_ticks = nice_ticks(0.0, float(max((b.count for b in bins), default=1) or 1))
    y_max = y_ticks[-1]

    def px(x: float) -> float:
        return LEFT + (x - lo) / (hi - lo) * plot_w

    parts = [y_axis(y_ticks, y_max, plot_w, plot_h, "samples")]
    for b in bins:
        x0, x1 = px(b.lo), px(b.hi) if b.hi > b.lo else px(b.lo) + plot_w
        h = b.count / y_max * plot_h
        parts.append(
            f'<rect {mark_attrs(mark, float(b.count), b.src)} x="{x0 + 0.5:.1f}" '
            f'y="{TOP + plot_h - h:.1f}" width="{max(x1 - x0 - 1, 1):.1f}" height="{h:.1f}" '
            f'fill="{PALETTE[0]}"><title>{b.count} samples in {b.lo:.2f}–{b.hi:.2f} ms'
            "</title></rect>"
        )
    for t in nice_ticks(lo, hi):
        if lo <= t <= hi:
            parts.append(
                f'<text x="{px(t):.1f}" y="{TOP + plot_h + 14}" text-anchor="middle">'
                f"{fmt_tick(t)}</text>"
            )
    parts.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle">'
        f"{esc(x_label)}</text>"
    )
    for i, g in enumerate(guides):
        x = px(g.value)
        right = x > LEFT + plot_w * 0.85  # near the right edge: label on the line's left
        parts.append(
            f'<line class="guide" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + plot_h}" '
            f'stroke="#D55E00" stroke-dasharray="4 3"/><text x="{x - 3 if right else x + 3:.1f}" '
            f'y="{TOP + 10 + 12 * i}" fill="#D55E00"'
            f"{' text-anchor=' + chr(34) + 'end' + chr(34) if right else ''}>{esc(g.label)}</text>"
        )
    return svg_root(width, height, "".join(parts), x_label)


def legend(entries: Sequence[tuple[str, str]]) -> str:
    """An HTML legend: (label, colour)."""
    items = "".join(
        f'<span><i style="background:{c}"></i>{esc(label)}</span>' for label, c in entries
    )
    return f'<div class="legend">{items}</div>'


def series_legend(labels: Sequence[str]) -> str:
    """The legend of an x-y chart's series, in its colour order."""
    return legend([(label, PALETTE[i % len(PALETTE)]) for i, label in enumerate(labels)])
