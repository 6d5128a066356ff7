"""A sweep as data: the recommended point per imgsz, the throughput order and the sweep record
(`sweep.json`) built from the points' rows. Pure: the rows come from
`libreyolo.document.sweep_files.collect_points`.

Must not: read or write files, import torch, numpy, Hydra or OmegaConf, or print.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from libreyolo.document.sweep_files import STATUSES, SWEEP_SCHEMA


@dataclass(frozen=True, slots=True)
class SweepView:
    """What `summary <sweep-dir>` shows: the sweep record, as `sweep.json` holds it."""

    kind: ClassVar[str] = "sweep"
    data: dict[str, Any]


def _metrics(entry: dict[str, Any]) -> dict[str, Any]:
    metrics = entry.get("metrics")
    return metrics if isinstance(metrics, dict) else {}


def _throughput(entry: dict[str, Any]) -> float:
    value = _metrics(entry).get("img_per_s")
    return float(value) if isinstance(value, int | float) else -1.0


def trusted(entry: dict[str, Any]) -> bool:
    """An ok point whose numbers hold: no memory thrash, not measured on a contended host
    (its img/s would rank the host's load, not the configuration)."""
    metrics = _metrics(entry)
    return (
        entry.get("status") == "ok"
        and not metrics.get("memory_pressure")
        and metrics.get("contended") is not True
    )


def recommend(points: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Per imgsz: the trusted point with the highest img/s."""
    best: dict[str, str] = {}
    for name, entry in points.items():
        if not trusted(entry):
            continue
        if _throughput(entry) < 0:
            continue
        key = str(entry.get("imgsz"))
        if key not in best or _throughput(entry) > _throughput(points[best[key]]):
            best[key] = name
    return dict(sorted(best.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0))


def by_throughput(points: dict[str, dict[str, Any]]) -> list[str]:
    """Point names, ok points first, by img/s (highest first)."""
    return sorted(points, key=lambda n: (points[n].get("status") != "ok", -_throughput(points[n])))


def counts(points: dict[str, dict[str, Any]]) -> dict[str, int]:
    """How many points have each status, and how many of the ok ones a resumed sweep reused."""
    tally = {status: 0 for status in STATUSES} | {"reused": 0}
    for entry in points.values():
        status = entry.get("status")
        tally[status if status in STATUSES else "failed"] += 1
        tally["reused"] += status == "ok" and entry.get("reused") is True
    return tally


def sweep_record(
    root: str, points: dict[str, dict[str, Any]], chart: str | None = None
) -> dict[str, Any]:
    """The sweep record (what `sweep.json` holds) of the point rows under `root`: `num_points`
    is the whole grid when the sweep planned it, missing points included."""
    tally = counts(points)
    return {
        "schema": SWEEP_SCHEMA,
        "sweep_dir": root,
        "points": points,
        "num_points": len(points),
        "num_ok": tally["ok"],
        "num_reused": tally["reused"],
        "num_failed": tally["failed"],
        "num_interrupted": tally["interrupted"],
        "num_missing": tally["missing"],
        "recommended": recommend(points),
        "chart": chart,
    }
