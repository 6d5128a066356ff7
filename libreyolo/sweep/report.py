"""Collect a sweep's point folders into `sweep.json`, a text table and recommendations.

Role: reads each point's `point.json`/`status.json` and its profile's metrics and verdict;
writes `sweep.json` at the sweep root; renders a table sorted by throughput (img/s) with peak
memory and verdict; recommends, per imgsz, the ok point with the highest throughput that shows
no memory thrash. `python -m libreyolo.sweep.report DIR` rebuilds the report of a sweep folder.

Must not: import torch, Hydra or OmegaConf, or measure anything.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from libreyolo.sweep.point import REQUEST_FILE, STATUS_FILE

SWEEP_FILE = "sweep.json"
HEADLINE = (
    "img_per_s",
    "step_ms",
    "latency_p50_ms",
    "peak_vram_mb",
    "memory_pressure",
    "bound",
)


@dataclass(frozen=True)
class SweepReport:
    """What a sweep produced: its JSON record, the table text and the failed count."""

    data: dict[str, Any]
    table: str
    num_failed: int
    path: Path


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _point(folder: Path) -> dict[str, Any]:
    request = _read(folder / REQUEST_FILE)
    status = _read(folder / STATUS_FILE) or {
        "status": "failed",
        "reason": "no status recorded (the point stopped before it finished)",
        "code": "crashed",
        "profile": None,
    }
    config = request.get("config", {})
    entry: dict[str, Any] = {
        "status": status.get("status", "failed"),
        "reason": status.get("reason") or None,
        "code": status.get("code") or None,
        "overrides": request.get("overrides", status.get("overrides", [])),
        "batch": config.get("batch"),
        "imgsz": config.get("imgsz"),
        "amp": config.get("amp"),
        "profile": None,
        "metrics": {},
        "verdict": None,
    }
    if entry["status"] == "ok" and status.get("profile"):
        profile_path = folder / status["profile"]
        raw = _read(profile_path)
        metrics = raw.get("metrics", {}) if isinstance(raw.get("metrics"), dict) else {}
        verdict = raw.get("verdict") if isinstance(raw.get("verdict"), dict) else {}
        entry["profile"] = str(profile_path)
        entry["metrics"] = {k: metrics.get(k) for k in HEADLINE}
        entry["verdict"] = verdict.get("bound") or metrics.get("bound")
    return entry


def _points(sweep_dir: Path, only: list[Path] | None) -> dict[str, dict[str, Any]]:
    if only is None:
        folders = sorted(p.parent for p in sweep_dir.rglob(REQUEST_FILE))
    else:
        folders = [Path(f).resolve() for f in only]
    return {str(f.relative_to(sweep_dir)): _point(f) for f in folders}


def _throughput(entry: dict[str, Any]) -> float:
    value = entry["metrics"].get("img_per_s")
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


def _fmt(value: Any, digits: int = 1) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{value:.{digits}f}"
    return "-"


def render_table(data: dict[str, Any]) -> str:
    """A plain-text table sorted by img/s (failed points last), then recommendations."""
    points: dict[str, dict[str, Any]] = data["points"]
    order = sorted(points, key=lambda n: (points[n]["status"] != "ok", -_throughput(points[n])))
    rows = [("point", "status", "img/s", "peak MB", "thrash", "verdict")]
    for name in order:
        e = points[name]
        m = e["metrics"]
        if e["status"] == "ok":
            verdict = str(e["verdict"] or "-")
        else:
            verdict = f"{e['code'] or 'failed'}: {e['reason'] or ''}".strip()
        rows.append(
            (
                name,
                e["status"],
                _fmt(m.get("img_per_s")),
                _fmt(m.get("peak_vram_mb")),
                _fmt(m.get("memory_pressure")),
                verdict,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=False)) + "  " + r[-1]
        for r in rows
    ]
    for imgsz, name in data["recommended"].items():
        lines.append(f"recommended for imgsz {imgsz}: {name}")
    if not data["recommended"]:
        lines.append("recommended: none (no point finished without failure or thrash)")
    failed = data["num_failed"]
    lines.append(
        f"{failed} of {len(points)} points failed" if failed else f"all {len(points)} points ok"
    )
    return "\n".join(lines)


def write_report(sweep_dir: str | Path, only: list[Path] | None = None) -> SweepReport:
    """Collect `sweep_dir`'s points (every folder holding a `point.json`, or just `only`),
    write `sweep.json` there and return the report."""
    root = Path(sweep_dir).resolve()
    points = _points(root, only)
    num_failed = sum(1 for e in points.values() if e["status"] != "ok")
    data: dict[str, Any] = {
        "sweep_dir": str(root),
        "points": points,
        "num_points": len(points),
        "num_failed": num_failed,
        "recommended": recommend(points),
    }
    path = root / SWEEP_FILE
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return SweepReport(data=data, table=render_table(data), num_failed=num_failed, path=path)


if __name__ == "__main__":
    report = write_report(sys.argv[1])
    print(report.table)
    sys.exit(1 if report.num_failed else 0)
