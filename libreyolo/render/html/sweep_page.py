"""The sweep page: one sweep folder's report (`libreyolo profile report <sweep dir>`, and the
`sweep.html` every `libreyolo-sweep` leaves beside `sweep.json`).

Reads the `SweepReport` (the sweep record as `summary <sweep dir> --json` prints it, and the ok
points' profile reports) and lays it out: the counts and the recommended point per imgsz, the
batch search's path and answer when a search chose the points (`tune_charts`; the grid's pick
is then only the fastest point), the charts (`sweep_charts`: the energy one only where a point
measured its energy, so a CPU sweep shows no empty card), the table of every point with the
reason of each one that did not finish, then each ok point's verdict, headline numbers and
per-step time, collapsed.

Each point is named in full in the page's `data-points` list (exact, as JSON) and in its table
row; its section heading, links, tooltips and captions cut long names short, and its section id
is `point-<index>`, never the name. Numbers of the record carry `["summary", "points", <index>,
...]`: an integer where the path enters `points` is the point's index in `data-points` (the
order of the table: by img/s). A point's own section is scoped to its profile, so its numbers
are those `summary`/`phases <profile> --json` print.

Pure: a report in, HTML text out. Nothing is computed here.
"""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import TYPE_CHECKING, NamedTuple

from libreyolo.analysis.report import ProfileReport, SweepReport
from libreyolo.analysis.sweep import by_throughput, has_energy, latency_metric, pareto_front
from libreyolo.render.html.markup import (
    Column,
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
from libreyolo.render.html.sweep_charts import (
    Index,
    Points,
    contended,
    energy_chart,
    memory_chart,
    metric,
    mfu_chart,
    point_src,
    short_point,
    throughput_chart,
    tradeoff_chart,
)
from libreyolo.render.html.tune_charts import search_section
from libreyolo.render.sweep_text import J_DIGITS
from libreyolo.render.units import significant_decimals

if TYPE_CHECKING:
    from libreyolo.document.sweep_model import SweepRecord, SweepRow
    from libreyolo.document.tune_model import TuneRecord

# A point's per-step chart costs ~300 bytes a mark: past this many steps (a long window) its
# section shows the phase table instead, so 64 points stay well under 3 MB.
MAX_STEPS_DRAWN = 24


def _anchor(index: int) -> str:
    """A point's section id: from its index, so no name ever lands in an attribute as an id."""
    return f"point-{index}"


def overview(record: SweepRecord, index: Index, *, tuned: bool = False) -> str:
    """The counts and the recommended point per imgsz (after a batch search, `tuned`: the
    search recommends; the grid's pick is only the fastest point)."""
    points: Points = record.points
    counts = [
        ("points", "num_points", record.num_points),
        ("ok", "num_ok", record.num_ok),
        ("failed", "num_failed", record.num_failed),
        ("interrupted", "num_interrupted", record.num_interrupted),
        ("missing", "num_missing", record.num_missing),
        ("reused", "num_reused", record.num_reused),
    ]
    items = [card(label, num(value, ("summary", key), digits=0)) for label, key, value in counts]
    best = []
    for imgsz, name in record.recommended.items():
        if name not in index:  # the record is checked when read: only a hand-made one
            continue
        i = index[name]
        ips = num(metric(points[name], "img_per_s"), point_src(i, "metrics", "img_per_s"))
        link = f'<a href="#{_anchor(i)}">{short_point(name)}</a>'
        best.append(
            f'<li>imgsz {esc(imgsz)}: <b>{link}</b> · {ips}<span class="unit">img/s</span></li>'
        )
    title = "Highest img/s per imgsz" if tuned else "Recommended per imgsz"
    why = ' The batch search\'s answer is <a href="#search">below</a>.' if tuned else ""
    recommended = (
        f'<h3>{title}</h3><ul class="notes">{"".join(best)}</ul>'
        '<p class="intro">The trusted point (no memory thrash, quiet host) with the highest '
        f"img/s.{why}</p>"
        if best
        else '<p class="intro">No point can be recommended: none finished on a quiet host '
        f"without memory thrash.{why}</p>"
    )
    return cards(items) + recommended


SETTING_COLUMNS = (
    Column("point", numeric=False),
    Column("batch"),
    Column("imgsz"),
    Column("amp", numeric=False),
    Column("threads", hint="none: torch's default"),
    Column("status", numeric=False),
)
VERDICT_COLUMN = Column(
    "verdict", numeric=False, hint="the verdict, or why the point did not finish"
)


class MetricColumn(NamedTuple):
    """A table column of one headline metric, shown `value × scale` to `digits` decimals
    (None: J_DIGITS significant digits)."""

    column: Column
    key: str
    digits: int | None = 1
    scale: float = 1.0


METRIC_COLUMNS = (
    MetricColumn(Column("img/s"), "img_per_s"),
    MetricColumn(Column("step ms"), "step_ms", 2),
    MetricColumn(Column("latency p50 ms"), "latency_p50_ms", 2),
    MetricColumn(Column("MFU %", hint="model FLOP/s over the device's peak"), "mfu", scale=100),
    MetricColumn(Column("J/img", hint="the GPU's energy per image"), "energy_j_per_img", None),
    MetricColumn(Column("peak VRAM MB"), "peak_vram_mb"),
    MetricColumn(
        Column("CPU wait %", hint="share of runnable time spent waiting for a CPU"),
        "cpu_wait_frac",
        scale=100,
    ),
)


def _tags(name: str, entry: SweepRow, best: set[str], front: set[str]) -> str:
    thrash = bool(entry.metrics.memory_pressure)
    tags = [
        ("ok", "recommended", name in best),
        ("", "Pareto", name in front),
        ("bad", "contended", contended(entry)),
        ("bad", "thrash", thrash),
        ("", "reused", entry.reused is True),
    ]
    return "".join(f'<span class="tag {cls}">{text}</span>' for cls, text, on in tags if on)


def _int_cell(value: int | None, i: int, key: str) -> str:
    return num(value, point_src(i, key), digits=0) if value is not None else "–"


def _why(entry: SweepRow) -> str:
    reason = entry.reason or "no reason recorded"
    code = entry.code
    return esc(f"{code}: {reason}" if code else reason)


def _metric_columns(points: Points) -> list[MetricColumn]:
    """The table's metric columns: J/img only where some point measured its energy."""
    energy = has_energy(points)
    return [c for c in METRIC_COLUMNS if energy or c.key != "energy_j_per_img"]


def points_table(report: SweepReport, index: Index, front: set[str]) -> str:
    """Every point, by img/s: the one place on the page that shows its name in full."""
    points: Points = report.record.points
    tune = report.tune
    # the search's answers when a search chose the points, else the grid's pick
    best = set(report.record.recommended.values() if tune is None else recommended_points(tune))
    by_name = {name: rank for rank, name in enumerate(sorted(points))}
    shown = _metric_columns(points)
    rows, keys, classes = [], [], []
    for name, i in index.items():
        entry = points[name]
        ok = entry.status == "ok"
        label = f'<a href="#{_anchor(i)}">{esc(name)}</a>' if ok else esc(name)
        cells = [
            label + _tags(name, entry, best, front),
            _int_cell(entry.batch, i, "batch"),
            _int_cell(entry.imgsz, i, "imgsz"),
            "–" if entry.amp is None else ("on" if entry.amp else "off"),
            _int_cell(entry.threads, i, "threads"),
            esc(entry.status),
        ]
        key: list[object] = [
            f"{by_name[name]:08d}",  # the name's rank: sorts as the names do, without them
            entry.batch,
            entry.imgsz,
            str(entry.amp),
            entry.threads,
            entry.status,
        ]
        for col in shown:
            value = metric(entry, col.key)
            digits = significant_decimals(value, J_DIGITS) if col.digits is None else col.digits
            src = point_src(i, "metrics", col.key)
            cells.append(num(value, src, digits=digits, scale=col.scale))
            key.append(value)
        cells.append(esc(entry.verdict or "–") if ok else _why(entry))
        key.append(entry.verdict if ok else entry.reason)
        rows.append(cells)
        keys.append(key)
        classes.append("best" if name in best else ("" if ok else "bad"))
    columns = (*SETTING_COLUMNS, *(c.column for c in shown), VERDICT_COLUMN)
    return table(columns, rows, sort_keys=keys, row_classes=classes)


def recommended_points(tune: TuneRecord) -> list[str]:
    """The points the batch search recommends."""
    return [rec.point for rec in tune.recommended]


def profile_input(report: SweepReport, name: str) -> str:
    """Where point `name`'s profile lies now: its recorded path rebased from the recorded sweep
    folder onto the page's (as `read_point_profiles` reads it)."""
    recorded = PurePath(str(report.record.points[name].profile))
    root = report.record.sweep_dir
    if root is not None and recorded.is_relative_to(root):
        recorded = recorded.relative_to(root)
    return str(PurePath(report.source) / recorded)


def point_section(report: SweepReport, name: str, point: ProfileReport) -> str:
    """One ok point, collapsed: its verdict, headline numbers and per-step time."""
    s = point.summary
    ips = num(s.metrics.get("img_per_s"), ("summary", "img_per_s"))
    head = (
        f"<summary>{short_point(name)} · {ips}"
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


def point_sections(report: SweepReport, index: Index) -> str:
    points: Points = report.record.points
    parts = []
    for name, i in index.items():
        if points[name].status != "ok":
            continue
        if name in report.points:
            body = point_section(report, name, report.points[name])
        else:
            reason = report.unreadable.get(name, "its profile was not read")
            body = (
                f"<details><summary>{short_point(name)} · profile unreadable</summary>"
                f'<p class="intro">{esc(reason)}</p></details>'
            )
        parts.append(f'<div id="{_anchor(i)}">{body}</div>')
    if not parts:
        return '<p class="intro">No point finished.</p>'
    return "".join(parts)


def _model(report: SweepReport) -> str | None:
    return next((p.summary.model for p in report.points.values() if p.summary.model), None)


def sweep_page(report: SweepReport) -> str:
    """The whole page for one sweep."""
    record = report.record
    points: Points = record.points
    index = {name: i for i, name in enumerate(by_throughput(points))}
    lat_key = latency_metric(points)
    pairs = {
        n: (lat, ips)
        for n, e in points.items()
        if e.status == "ok"
        and (lat := metric(e, lat_key)) is not None
        and (ips := metric(e, "img_per_s")) is not None
    }
    front = set(pareto_front(pairs))
    tune = report.tune
    search = [] if tune is None else [("search", "batch search")]
    energy = energy_chart(points, index)
    energy_toc = [] if energy is None else [("energy", "energy vs throughput")]
    toc = [
        ("overview", "overview"),
        *search,
        ("throughput", "throughput"),
        ("mfu", "MFU"),
        ("tradeoff", "latency vs throughput"),
        *energy_toc,
        ("memory", "memory"),
        ("table", "points"),
        ("sections", "each point"),
    ]
    sections = "".join(
        [
            section("overview", "Overview", overview(record, index, tuned=tune is not None)),
            "" if tune is None else section("search", "Batch search", search_section(tune)),
            section("throughput", "Throughput by batch", throughput_chart(points, index)),
            section("mfu", "MFU by batch", mfu_chart(points, index)),
            section("tradeoff", "Latency against throughput", tradeoff_chart(points, index)),
            "" if energy is None else section("energy", "Energy against throughput", energy),
            section("memory", "Peak memory by batch", memory_chart(points, index)),
            section(
                "table",
                "Every point",
                points_table(report, index, front),
                intro="By img/s; click a heading to sort. Points that did not finish say why.",
            ),
            section(
                "sections",
                "Each point",
                point_sections(report, index),
                intro="Open a point for its verdict and per-step time; <code>libreyolo profile "
                "report</code> on its profile gives its full page.",
            ),
        ]
    )
    names = esc(json.dumps(list(index)))  # each name once, exact: what the indices refer to
    content = f'<div data-points="{names}">{sections}</div>'
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
