"""A sweep's files: the point folders (`point.json`, `status.json`, the profile) and the sweep
record `sweep.json` at the sweep root.

Role: the names of those files; `collect_points` reads each point folder into its row of the
sweep record; `read_sweep_record` reads a `sweep.json` back, refusing one that is not a record.
Only small JSON files are read; nothing is written here (the sweep's report writer does that).

Must not: import torch, numpy, Hydra or OmegaConf (readers run on a laptop), or print.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from libreyolo.errors import AnalysisError

REQUEST_FILE = "point.json"  # a point's request: {config, overrides}
STATUS_FILE = "status.json"  # a point's outcome: {status, reason, code, overrides, profile, ...}
SWEEP_FILE = "sweep.json"  # the sweep record at the sweep root
CHART_FILE = "sweep.png"  # the throughput chart next to it
SWEEP_SCHEMA = "libreyolo.sweep/v1"
MAX_DEPTH = 3  # point folders sit this deep under the sweep root at most (subdir b4_s640_amp1)
HEADLINE = (
    "img_per_s",
    "step_ms",
    "latency_p50_ms",
    "peak_vram_mb",
    "memory_pressure",
    "bound",
)
# copied from status.json
TIMING = ("held_device", "lease_wait_s", "measure_s", "window_s", "point_s")
NO_STATUS: dict[str, Any] = {
    "status": "failed",
    "reason": "no status recorded (the point stopped before it finished)",
    "code": "crashed",
    "profile": None,
}


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _loads(text: str) -> Any:
    """json.loads without NaN or infinity, which the record could not be written back with."""
    return json.loads(text, parse_float=_finite, parse_constant=_finite)


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object at `path`, or {} when it is absent, unreadable or not an object."""
    try:
        data = _loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _object(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def point_entry(folder: Path) -> dict[str, Any]:
    """One point's row of the sweep record, read from its folder."""
    request = read_json(folder / REQUEST_FILE)
    status = read_json(folder / STATUS_FILE) or NO_STATUS
    config = request.get("config", {}) if isinstance(request.get("config"), dict) else {}
    entry: dict[str, Any] = {
        "status": status.get("status", "failed"),
        "reason": status.get("reason") or None,
        "code": status.get("code") or None,
        "overrides": request.get("overrides", status.get("overrides", [])),
        "batch": config.get("batch"),
        "imgsz": config.get("imgsz"),
        "amp": config.get("amp"),
        "amp_effective": None,  # what the profile says ran: AMP/--half has no effect on a CPU
        "profile": None,
        "metrics": {},
        "verdict": None,
    }
    entry |= {key: status[key] for key in TIMING if key in status}
    if entry["status"] == "ok" and status.get("profile"):
        profile_path = folder / status["profile"]
        raw = read_json(profile_path)
        metrics = _object(raw, "metrics")
        verdict = _object(raw, "verdict")
        entry["profile"] = str(profile_path)
        entry["metrics"] = {k: metrics.get(k) for k in HEADLINE}
        entry["verdict"] = verdict.get("bound") or metrics.get("bound")
        entry["amp_effective"] = _object(raw, "run").get("amp")
    return entry


def point_folders(root: Path, max_depth: int = MAX_DEPTH) -> list[Path]:
    """The folders under `root` (itself included) that hold a `point.json`, sorted; hidden
    folders (Hydra's `.hydra`) are not entered."""
    found = []
    base = len(root.parts)
    for here, dirs, files in os.walk(root):
        depth = len(Path(here).parts) - base
        dirs[:] = [] if depth >= max_depth else [d for d in dirs if not d.startswith(".")]
        if REQUEST_FILE in files:
            found.append(Path(here))
    return sorted(found)


def collect_points(root: Path, folders: list[Path]) -> dict[str, dict[str, Any]]:
    """The rows of the sweep record for point `folders` under `root`, keyed by their path
    relative to it."""
    return {
        (f.relative_to(root).as_posix() if f != root else f.name): point_entry(f) for f in folders
    }


def read_sweep_record(record_path: Path) -> dict[str, Any]:
    """A `sweep.json` read back; AnalysisError (exit 1) when it is not a sweep record."""
    try:
        data = _loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as err:
        raise AnalysisError(f"failed to read sweep {record_path}: {err}") from err
    if not isinstance(data, dict) or not isinstance(data.get("points"), dict):
        raise AnalysisError(f"failed to read sweep {record_path}: not a sweep record (no points)")
    if data.get("schema", SWEEP_SCHEMA) != SWEEP_SCHEMA:
        raise AnalysisError(
            f"failed to read sweep {record_path}: unknown schema {data['schema']!r}",
            hint=f"this libreyolo reads {SWEEP_SCHEMA}",
        )
    return data
