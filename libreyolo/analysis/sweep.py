"""A sweep as data: the recommended point per imgsz, the throughput order and the sweep record
(`sweep.json`) built from the points' rows. Pure: the rows come from
`libreyolo.document.sweep_files.collect_points`.

Must not: read or write files, import torch, numpy, Hydra or OmegaConf, or print.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from libreyolo.document.sweep_files import SWEEP_SCHEMA


@dataclass(frozen=True, slots=True)
class SweepView:
    """What `summary <sweep-dir>` shows: the sweep record, as `sweep.json` holds it."""

    kind: ClassVar[str] = "sweep"
    data: dict[str, Any]


def _throughput(entry: dict[str, Any]) -> float:
    metrics = entry.get("metrics")  # a sweep.json read back may hold anything here
    value = metrics.get("img_per_s") if isinstance(metrics, dict) else None
    return float(value) if isinstance(value, int | float) else -1.0


def recommend(points: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Per imgsz: the ok point with the highest img/s and no memory thrash."""
    best: dict[str, str] = {}
    for name, entry in points.items():
        if entry["status"] != "ok" or entry["metrics"].get("memory_pressure"):
            continue
        if _throughput(entry) < 0:
            continue
        key = str(entry["imgsz"])
        if key not in best or _throughput(entry) > _throughput(points[best[key]]):
            best[key] = name
    return dict(sorted(best.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0))


def by_throughput(points: dict[str, dict[str, Any]]) -> list[str]:
    """Point names, ok points first, by img/s (highest first)."""
    return sorted(points, key=lambda n: (points[n].get("status") != "ok", -_throughput(points[n])))


def sweep_record(
    root: str, points: dict[str, dict[str, Any]], chart: str | None = None
) -> dict[str, Any]:
    """The sweep record (what `sweep.json` holds) of the point rows under `root`."""
    return {
        "schema": SWEEP_SCHEMA,
        "sweep_dir": root,
        "points": points,
        "num_points": len(points),
        "num_failed": sum(1 for e in points.values() if e["status"] != "ok"),
        "recommended": recommend(points),
        "chart": chart,
    }
