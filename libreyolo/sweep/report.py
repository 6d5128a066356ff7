"""Write a sweep's report: `sweep.json`, the throughput chart `sweep.png` and the table text.

Role: reads the point folders (`libreyolo.document.sweep_files`: the planned grid when the
sweep wrote `sweep_plan.json`, missing points included) into the sweep record
(`libreyolo.analysis.sweep`), draws the chart (`libreyolo.sweep.chart`, skipped without
matplotlib), writes `sweep.json` at the sweep root (atomically) and renders the table
(`libreyolo.render.sweep_text`). `python -m libreyolo.sweep.report DIR` rebuilds the report of a
sweep folder (exit 0 when every point is ok, 1 otherwise, 2 when it refuses).

Must not: import torch, Hydra or OmegaConf, measure anything, or replace a `sweep.json` or
`sweep.png` it did not write (`owned.refuse_foreign`: `UsageError`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from libreyolo.analysis.sweep import recommend, sweep_record
from libreyolo.document.files import write_atomic
from libreyolo.document.sweep_files import CHART_FILE, SWEEP_FILE, collect_sweep
from libreyolo.errors import UsageError
from libreyolo.render.sweep_text import sweep_table as render_table
from libreyolo.sweep.chart import write_chart
from libreyolo.sweep.owned import refuse_foreign

__all__ = ["SweepReport", "recommend", "render_table", "write_report"]


@dataclass(frozen=True)
class SweepReport:
    """What a sweep produced: its JSON record, the table text and the failed count."""

    data: dict[str, Any]
    table: str
    num_failed: int
    path: Path

    @property
    def complete(self) -> bool:
        """Whether every point of the sweep is ok."""
        return bool(self.data["num_ok"] == self.data["num_points"])


def write_report(sweep_dir: str | Path, only: list[Path] | None = None) -> SweepReport:
    """Collect `sweep_dir`'s points (the planned grid, else `only`, else every folder holding a
    `point.json`), draw `sweep.png`, write `sweep.json` there and return the report."""
    root = Path(sweep_dir).resolve()
    refuse_foreign(root)
    data = sweep_record(str(root), collect_sweep(root, only))
    chart = root / CHART_FILE
    if write_chart(data["points"], chart) is None:
        chart.unlink(missing_ok=True)  # ours (refuse_foreign): not to outlive the data it drew
    else:
        data["chart"] = CHART_FILE
    path = root / SWEEP_FILE
    write_atomic(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    return SweepReport(
        data=data, table=render_table(data), num_failed=data["num_failed"], path=path
    )


if __name__ == "__main__":
    try:
        report = write_report(sys.argv[1])
    except UsageError as err:
        sys.stderr.write(f"{err.message} ({err.hint})\n")
        sys.exit(err.status)
    print(report.table)
    sys.exit(0 if report.complete else 1)
