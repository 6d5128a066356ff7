"""The batch search on the sweep page (`tune.json`): per series the path it measured, img/s by
batch (peak memory by batch for maxfit, and the latency percentile by batch for the latency
goal), each point numbered in the order measured, every bound a marker of its own at its batch
(out of memory: a cross; over the memory budget: a triangle; over the latency bound: a hollow
diamond), the recommended point ringed with its evidence as the caption, and the measured path
as a table. The series are drawn in order up to SEARCH_CHARS of markup, then a banner says how
many are shown: tune.json may hold 4096 series of 256 steps, a page of hundreds of MB.

The x axis is log2 when the batches span a factor of 4 or more (the search grows ×2; the
refined batches between still read), else linear. Numbers carry `["summary", "tune", ...]`:
what `summary <sweep dir> --json` prints under `tune`.

Pure: the record in, HTML text out; the labels and the matching of a series to its
recommendation are `render.tune_text`'s, as `summary` prints them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.analysis.sweep import log2_axis
from libreyolo.render.html import svg, xy
from libreyolo.render.html.markup import Column, Src, banner, esc, num, table
from libreyolo.render.tune_text import answer_text, goal_line, recommendation_of, series_label

if TYPE_CHECKING:
    from libreyolo.document.tune_model import TuneRecord, TuneSeries, TuneSettings, TuneStep

BOUND = "#D55E00"  # the palette's vermillion: what does not fit
HEADROOM = 1.1  # room above the highest point for its ring and number
# The series drawn stop past this many characters: a search's series costs ~25 kB (a path of
# 256 steps ~600 kB), so a real search is drawn whole, while a tune.json of 4096 series would
# make a page of hundreds of MB that a browser cannot open.
SEARCH_CHARS = 4_000_000
# What each kind of point is drawn as, its colour (None: the series') and its legend entry.
KINDS = {
    "fits": ("circle", None, "●", "measured, numbered in the order measured"),
    "latency": ("diamond", None, "◇", "over the latency bound"),
    "oom": ("cross", BOUND, "✕", "out of memory"),
    "over_budget": ("triangle", BOUND, "▲", "over the memory budget"),
    "failed": ("cross", svg.GREY, "✕", "failed"),
    "ranked": ("circle", svg.GREY, "●", "ranked on a short window, then measured in full"),
}
# (the step's field drawn, the chart's mark name, the y axis) per chart
THROUGHPUT = ("img_per_s", "tune-throughput", "img/s")
MEMORY = ("peak_mb", "tune-memory", "peak memory (MB)")


def tune_src(*keys: str | int) -> Src:
    """Where `summary <sweep dir> --json` prints a value of the tune record."""
    return ("summary", "tune", *keys)


def _kind(settings: TuneSettings, step: TuneStep, superseded: bool = False) -> str:
    """The point's kind; `superseded`: a ranked step its batch's full measurement replaced."""
    if superseded:
        return "ranked"
    if not step.fits:
        return step.bound or "failed"
    bound = settings.max_latency_ms
    over = step.latency_ms is not None and bound is not None and step.latency_ms > bound
    return "latency" if settings.goal == "latency" and over else "fits"


def _tip(order: int, step: TuneStep, kind: str) -> str:
    head = f"#{order} batch {step.batch}"
    peak = "" if step.peak_mb is None else f", peak {step.peak_mb:,.0f} MB"
    if not step.fits:
        return f"{head}: {KINDS[kind][3]}{peak}"
    rate = "no img/s" if step.img_per_s is None else f"{step.img_per_s:.1f}"
    rate += "" if step.img_per_s_sd is None else f" ± {step.img_per_s_sd:.1f}"
    window = " on the ranking window" if step.ranked else ""
    text = f"{head}: {rate} img/s over {step.trials} trials{window}{peak}"
    text += "" if step.latency_ms is None else f", latency {step.latency_ms:.1f} ms"
    v = step.versus
    if v is not None:
        call = {True: "significant", False: "not significant", None: "untested"}[v.significant]
        text += f"; {v.gain_pct:+.1f} % over {v.batch}, {call}"
    return text + (" (reused)" if step.reused else "")


def _points(
    tune: TuneRecord, index: int, key: str
) -> tuple[list[xy.XYPoint], dict[str, list[xy.XYPoint]]]:
    """Series `index`'s steps as points of the step field `key`: those that fit with a value
    (joined by a line), and the others by kind (drawn on the axis without a value)."""
    series = tune.series[index]
    found = recommendation_of(tune, series)
    ringed = None if found is None else found[1].point
    joined: list[xy.XYPoint] = []
    others: dict[str, list[xy.XYPoint]] = {}
    orders: dict[int, list[int]] = {}  # batch -> the orders it was measured in
    for order, step in enumerate(series.path):
        orders.setdefault(step.batch, []).append(order + 1)
    for order, (step, kind) in enumerate(zip(series.path, _step_kinds(tune, series), strict=True)):
        value = getattr(step, key)
        point = xy.XYPoint(
            step.batch,
            0.0 if value is None else float(value),
            None if value is None else tune_src("series", index, "path", order, key),
            _tip(order + 1, step, kind),
            shape=KINDS[kind][0],
            # a batch measured again carries all its numbers on its last measurement ("6, 10"),
            # so two numbers never pile up on one batch
            label=_label(orders[step.batch], order + 1),
            ring=step.point == ringed,  # once: a hand-made path may repeat a point
        )
        if point.ring:
            ringed = None
        if kind != "ranked" and step.fits and value is not None:
            joined.append(point)
        else:
            others.setdefault(kind, []).append(point)
    return joined, others


def _label(orders: list[int], order: int) -> str:
    """The number drawn above a step: none on a batch's earlier measurements, every order on
    its last."""
    return ", ".join(map(str, orders)) if order == orders[-1] else ""


def _chart(tune: TuneRecord, index: int, what: tuple[str, str, str]) -> str:
    """One chart of series `index`'s path: the step field `what[0]` by batch."""
    series = tune.series[index]
    key, mark, y_label = what
    joined, others = _points(tune, index, key)
    drawn = [xy.XYSeries(series_label(series), tuple(joined))] if joined else []
    for kind, points in others.items():
        colour = KINDS[kind][1] or svg.PALETTE[0]
        drawn.append(xy.XYSeries(kind, tuple(points), connect=False, colour=colour))
    batches = sorted({step.batch for step in series.path})
    chart = xy.XYChart(
        tuple(drawn),
        "batch",
        y_label,
        log2_x=log2_axis(set(batches)),
        guides=_guides(tune.settings, key),
        x_ticks=tuple(float(b) for b in batches),
        headroom=HEADROOM,
    )
    return xy.xy_chart(chart, mark=mark, width=1100, height=260)


def _guides(settings: TuneSettings, key: str) -> tuple[svg.Guide, ...]:
    if key == "peak_mb" and settings.memory_budget_mb is not None:
        return (svg.Guide(float(settings.memory_budget_mb), "memory budget"),)
    if key == "latency_ms" and settings.max_latency_ms is not None:
        return (svg.Guide(float(settings.max_latency_ms), "latency bound"),)
    return ()


def _legend(kinds: set[str], ringed: bool) -> str:
    items = []
    for kind, (_, colour, glyph, text) in KINDS.items():
        if kind in kinds:
            ink = colour or svg.PALETTE[0]
            items.append(f'<span><b style="color:{ink}">{glyph}</b> {esc(text)}</span>')
    if ringed:
        items.append("<span><b>◯</b> recommended</span>")
    return f'<div class="legend">{"".join(items)}</div>'


def _caption(tune: TuneRecord, series: TuneSeries) -> str:
    """The answer with its evidence (the batch a number of the record), or why there is none;
    then the stop reason."""
    found = recommendation_of(tune, series)
    stop = f" Stopped: <code>{esc(series.stopped)}</code>."
    if found is None:
        text = answer_text(series, None)
        return esc(text[:1].upper() + text[1:]) + "." + stop
    k, rec = found
    batch = num(rec.batch, tune_src("recommended", k, "batch"), digits=0)
    named = f"batch {rec.batch}"  # the evidence opens with it: the batch is shown as a number
    rest = rec.evidence[len(named) :] if rec.evidence.startswith(named) else f": {rec.evidence}"
    return f"<b>Recommended batch {batch}</b>{esc(rest)}.{stop}"


def _charts_of(tune: TuneRecord) -> tuple[tuple[str, str, str], ...]:
    """Which charts each series gets: img/s (maxfit: peak memory, when measured), and the
    latency percentile for the latency goal."""
    settings = tune.settings
    steps = [step for series in tune.series for step in series.path]
    if settings.goal == "maxfit" and any(step.peak_mb is not None for step in steps):
        return (MEMORY,)
    if settings.goal == "latency":
        latency = ("latency_ms", "tune-latency", f"latency p{settings.percentile} (ms)")
        return THROUGHPUT, latency
    return (THROUGHPUT,)


PATH_COLUMNS = (
    Column("#", hint="the order measured"),
    Column("batch"),
    Column("fits", numeric=False, hint="or why not: oom, over_budget"),
    Column("img/s", hint="the trials' mean"),
    Column("± SD"),
    Column("trials"),
    Column("window", numeric=False, hint="ranked: the knee's short ranking window"),
    Column("peak MB", hint="VRAM on CUDA, the window's resident memory on the CPU"),
    Column("latency ms", hint="the goal's percentile"),
    Column("vs batch", hint="the next smaller batch that fits"),
    Column("gain %"),
    Column("Welch p", hint="two-sided; the gate's test on the trials' img/s"),
    Column("significant", numeric=False),
)


def _step_row(index: int, order: int, step: TuneStep) -> tuple[list[str], list[object]]:
    """One measured step's cells and sort keys."""

    def cell(key: str, value: object, digits: int = 1, *, signed: bool = False) -> str:
        src = tune_src("series", index, "path", order, *key.split("."))
        return num(value, src, digits=digits, signed=signed)

    v = step.versus
    fits = "yes" if step.fits else (step.bound or "failed")
    called = "–" if v is None or v.significant is None else ("yes" if v.significant else "no")
    cells = [
        str(order + 1),
        cell("batch", step.batch, 0),
        esc(fits),
        cell("img_per_s", step.img_per_s),
        cell("img_per_s_sd", step.img_per_s_sd),
        cell("trials", step.trials, 0),
        "ranked" if step.ranked else "full",
        cell("peak_mb", step.peak_mb, 0),
        cell("latency_ms", step.latency_ms),
        "–" if v is None else cell("versus.batch", v.batch, 0),
        "–" if v is None else cell("versus.gain_pct", v.gain_pct, signed=True),
        "–" if v is None else cell("versus.p_value", v.p_value, 4),
        called,
    ]
    versus: list[object] = [None] * 3 if v is None else [v.batch, v.gain_pct, v.p_value]
    keys: list[object] = [order, step.batch, fits, step.img_per_s, step.img_per_s_sd]
    keys += [step.trials, step.ranked, step.peak_mb, step.latency_ms, *versus, called]
    return cells, keys


def path_table(tune: TuneRecord, index: int) -> str:
    """Series `index`'s measured path, in the order measured."""
    rows = [_step_row(index, order, step) for order, step in enumerate(tune.series[index].path)]
    return table(PATH_COLUMNS, [r[0] for r in rows], sort_keys=[r[1] for r in rows])


def _step_kinds(tune: TuneRecord, series: TuneSeries) -> list[str]:
    """Each step's kind, in path order (a ranked step measured again in full: "ranked")."""
    last = {step.batch: order for order, step in enumerate(series.path)}
    return [
        _kind(tune.settings, step, superseded=step.ranked and last[step.batch] > order)
        for order, step in enumerate(series.path)
    ]


def _kinds(tune: TuneRecord, series: TuneSeries) -> set[str]:
    return set(_step_kinds(tune, series))


def _series_block(tune: TuneRecord, index: int, series: TuneSeries) -> str:
    """One series: its charts, legend, answer and measured path."""
    if series.path:
        ringed = recommendation_of(tune, series) is not None
        charts = "".join(
            _chart(tune, index, what)
            for i, what in enumerate(_charts_of(tune))
            if i == 0 or any(getattr(step, what[0]) is not None for step in series.path)
        )  # the first always (it draws the bounds), the others where there is a value
        body = _legend(_kinds(tune, series), ringed) + charts
    else:
        body = '<p class="intro">Nothing measured.</p>'
    path = (
        f"<details><summary>The measured path</summary>{path_table(tune, index)}</details>"
        if series.path
        else ""
    )
    return (
        f"<h3>{esc(series_label(series))}</h3><figure>{body}"
        f"<figcaption>{_caption(tune, series)}</figcaption></figure>{path}"
    )


def _cut_note(shown: int, total: int) -> str:
    return banner(
        f"{shown} of {total} series shown: the page draws a search's series up to "
        f"{SEARCH_CHARS // 1_000_000} MB; libreyolo profile summary <sweep dir> --json prints "
        "every series."
    )


def search_section(tune: TuneRecord) -> str:
    """The search's goal, then per series its charts, legend, answer and measured path, in
    order until SEARCH_CHARS are drawn (then a note says how many are shown)."""
    blocks: list[str] = []
    drawn = 0
    for index, series in enumerate(tune.series):
        if drawn >= SEARCH_CHARS:
            break
        blocks.append(_series_block(tune, index, series))
        drawn += len(blocks[-1])
    cut = [] if len(blocks) == len(tune.series) else [_cut_note(len(blocks), len(tune.series))]
    goal = f'<p class="intro">{esc(goal_line(tune.settings, tune.num_points))}.</p>'
    if not tune.series:
        blocks.append('<p class="intro">The search measured no series.</p>')
    return "".join([goal, *cut, *blocks])
