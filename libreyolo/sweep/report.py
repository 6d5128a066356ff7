"""Write a sweep's report: `sweep.json`, the throughput chart `sweep.png` and the table text.

Role: reads the point folders (`libreyolo.document.sweep_files`) into the sweep record
(`libreyolo.analysis.sweep`), draws the chart (`libreyolo.sweep.chart`, skipped without
matplotlib), writes `sweep.json` at the sweep root and renders the table
(`libreyolo.render.sweep_text`). `python -m libreyolo.sweep.report DIR` rebuilds the report of a
sweep folder.

Must not: import torch, Hydra or OmegaConf, or measure anything.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from libreyolo.analysis.sweep import recommend, sweep_record
from libreyolo.document.sweep_files import CHART_FILE, SWEEP_FILE, collect_points, point_folders
from libreyolo.render.sweep_text import sweep_table as render_table
from libreyolo.sweep.chart import write_chart

__all__ = ["SweepReport", "recommend", "render_table", "write_report"]


@dataclass(frozen=True)
class SweepReport:
    """What a sweep produced: its JSON record, the table text and the failed count."""

    data: dict[str, Any]
    table: str
    num_failed: int
    path: Path


def write_report(sweep_dir: str | Path, only: list[Path] | None = None) -> SweepReport:
    """Collect `sweep_dir`'s points (every folder holding a `point.json`, or just `only`),
    draw `sweep.png`, write `sweep.json` there and return the report."""
    root = Path(sweep_dir).resolve()
    folders = point_folders(root) if only is None else [Path(f).resolve() for f in only]
    data = sweep_record(str(root), collect_points(root, folders))
    chart = root / CHART_FILE
    chart.unlink(missing_ok=True)  # a stale chart must not outlive the data it drew
    if write_chart(data["points"], chart) is not None:
        data["chart"] = CHART_FILE
    path = root / SWEEP_FILE
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return SweepReport(
        data=data, table=render_table(data), num_failed=data["num_failed"], path=path
    )


if __name__ == "__main__":
    report = write_report(sys.argv[1])
    print(report.table)
    sys.exit(1 if report.num_failed else 0)
