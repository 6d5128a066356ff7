"""Write a sweep's report: `sweep.json`, the throughput chart `sweep.png`, the page
`sweep.html` and the table text.

Role: reads the point folders (`libreyolo.document.sweep_files`: the planned grid when the
sweep wrote `sweep_plan.json`, missing points included) into the sweep record
(`libreyolo.analysis.sweep`), draws the chart (`libreyolo.sweep.chart`, skipped without
matplotlib), writes `sweep.json` at the sweep root (atomically), then the sweep page from it
and the ok points' profiles (`libreyolo.render.html.sweep_page`, the page `libreyolo profile
report <sweep dir>` writes; one line on stderr when it cannot be drawn) and renders the table
(`libreyolo.render.sweep_text`). `python -m libreyolo.sweep.report DIR` rebuilds the report of a
sweep folder (exit 0 when every point is ok, 1 otherwise, 2 when it refuses), its status set
by `libreyolo.boundary.status`.

Must not: import torch, Hydra or OmegaConf, measure anything, fail a sweep because its page
cannot be drawn, replace a `sweep.json`, `sweep.png` or `sweep.html` it did not write
(`owned.refuse_foreign`: `UsageError`), or write but through the `Output` it is handed.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

from libreyolo.analysis.report import sweep_report
from libreyolo.analysis.sweep import ranked_only, recommend, sweep_record
from libreyolo.boundary.output import Output
from libreyolo.boundary.status import exit_process, exit_status
from libreyolo.document.codec import document_bytes
from libreyolo.document.convert import to_plain
from libreyolo.document.files import write_atomic
from libreyolo.document.json_value import JsonObject
from libreyolo.document.point_profiles import read_point_profiles
from libreyolo.document.sweep_files import (
    CHART_FILE,
    PAGE_FILE,
    PLAN_FILE,
    SWEEP_FILE,
    check_contained,
    collect_sweep,
)
from libreyolo.document.sweep_io import TUNE_FILE, read_tune_record
from libreyolo.document.sweep_model import SweepRecord
from libreyolo.document.tune_model import BOUNDS
from libreyolo.errors import ExitStatus, ProfileError, UsageError
from libreyolo.render.html.sweep_page import sweep_page
from libreyolo.render.sweep_text import sweep_table as render_table
from libreyolo.sweep.chart import write_chart
from libreyolo.sweep.owned import refuse_foreign

__all__ = ["SweepResult", "recommend", "render_table", "write_report"]


@dataclass(frozen=True)
class SweepResult:
    """What a sweep produced: its record, the table text and the failed count."""

    record: SweepRecord
    table: str
    num_failed: int
    path: Path

    @property
    def data(self) -> JsonObject:
        """The record as `sweep.json` holds it (plain JSON)."""
        plain = to_plain(self.record, sort_keys=True)
        assert isinstance(plain, dict)
        return plain

    @property
    def complete(self) -> bool:
        """Whether every point of the sweep is ok."""
        return self.record.num_ok == self.record.num_points

    @property
    def complete_but_bounds(self) -> bool:
        """Whether every point is ok or a bound a tune search found (it did not fit: out of
        memory, over the budget), which is no failure there."""
        return all(
            row.status == "ok" or (row.status == "failed" and row.code in BOUNDS)
            for row in self.record.points.values()
        )


def write_report(
    sweep_dir: str | Path, only: list[Path] | None = None, *, out: Output | None = None
) -> SweepResult:
    """Collect `sweep_dir`'s points (the planned grid, else `only`, else every folder holding a
    `point.json`), draw `sweep.png`, write `sweep.json` there and return the report; a chart
    or page skipped is one line on `out` (default: the real streams). AnalysisError (exit 1),
    nothing written, when its plan or `tune.json` is a link leading outside it."""
    out = out or Output.plain()
    root = Path(sweep_dir).resolve()
    refuse_foreign(root)
    for name in (PLAN_FILE, TUNE_FILE):  # read below: a link out would stand for another sweep
        check_contained(root, name)
    record = sweep_record(str(root), collect_sweep(root, only))
    chart = root / CHART_FILE
    if write_chart(record.points, chart, out=out, ranked=_ranked(root)) is None:
        chart.unlink(missing_ok=True)  # ours (refuse_foreign): not to outlive the data it drew
    else:
        record = dataclasses.replace(record, chart=CHART_FILE)
    path = root / SWEEP_FILE
    write_atomic(path, document_bytes(record))
    write_page(root, record, out=out)
    return SweepResult(
        record=record,
        table=render_table(record),
        num_failed=record.num_failed or 0,
        path=path,
    )


def _ranked(root: Path) -> frozenset[str]:
    """The points a tune search at `root` measured on its ranking window only; none when it
    has no `tune.json` or one that cannot be read (the page says why, `write_page`)."""
    try:
        return ranked_only(read_tune_record(root / TUNE_FILE))
    except ProfileError:
        return frozenset()


def write_page(root: Path, record: SweepRecord, *, out: Output | None = None) -> Path | None:
    """Write `sweep.html` for the record of the sweep at `root`; None, with one line on `out`
    (default: the real streams), when it cannot be drawn (a stale page of ours is then
    removed)."""
    page = root / PAGE_FILE
    try:
        profiles, lost = read_point_profiles(root, record)
        tune = read_tune_record(root / TUNE_FILE)  # the batch search's, when it chose the points
        html = sweep_page(sweep_report(record, str(root), profiles, lost, tune))
        write_atomic(page, html.encode("utf-8"))
    except Exception as err:  # the page is a view: no fault in drawing it may cost the sweep
        (out or Output.plain()).say(f"sweep page skipped: {type(err).__name__}: {err}")
        page.unlink(missing_ok=True)  # ours (refuse_foreign): not to outlive the data it drew
        return None
    return page


def main(argv: list[str] | None = None) -> None:
    """`python -m libreyolo.sweep.report DIR`: rebuild the report, print its table, exit with
    its status (`libreyolo.boundary.status`; a crash shows its traceback)."""
    out = Output.plain()
    words = sys.argv[1:] if argv is None else argv
    exit_process(exit_status(lambda: _rebuild(words, out), out, crash_traceback=True), out)


def _rebuild(words: list[str], out: Output) -> ExitStatus:
    if len(words) != 1:
        raise UsageError(
            "python -m libreyolo.sweep.report takes one sweep folder",
            hint="python -m libreyolo.sweep.report <sweep dir>",
        )
    report = write_report(words[0], out=out)
    out.lines(report.table)
    return ExitStatus.OK if report.complete else ExitStatus.FAILED


if __name__ == "__main__":
    main()
