"""A sweep's files: the point folders (`point.json`, `status.json`, the profile), the grid
`sweep_plan.json` written when the sweep starts and the sweep record `sweep.json` at the end.

Role: the names of those files and how to tell ours from someone else's (`is_request`,
`is_status`, `is_plan`, `is_sweep_record`); `collect_sweep` reads the planned (else the found)
point folders into the rows of the sweep record, a planned point without a folder being
`missing`; `read_sweep_record` reads a `sweep.json` back, refusing one that is not a record.
Every path taken from these files stays inside the sweep folder (symlinks resolved): a point
folder or a profile that leads elsewhere makes that point `failed`, and nothing outside is read.
Only small regular JSON files are read; nothing is written here (the sweep's writers do that).

Must not: import torch, numpy, Hydra or OmegaConf (readers run on a laptop), or print.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from libreyolo.document.limits import MAX_PROFILE_BYTES, open_regular
from libreyolo.errors import AnalysisError, ProfileError

REQUEST_FILE = "point.json"  # a point's request: {config, overrides}
STATUS_FILE = "status.json"  # a point's outcome: {status, reason, code, overrides, profile, ...}
LOG_FILE = "point.log"  # an isolated point's stderr, also relayed to the sweep's stderr
PLAN_FILE = "sweep_plan.json"  # the grid, written before the first point: {schema, points}
SWEEP_FILE = "sweep.json"  # the sweep record at the sweep root
CHART_FILE = "sweep.png"  # the throughput chart next to it
PAGE_FILE = "sweep.html"  # the sweep's report page next to it
SWEEP_SCHEMA = "libreyolo.sweep/v1"
PLAN_SCHEMA = "libreyolo.sweep-plan/v1"
MAX_DEPTH = 3  # point folders sit this deep under the sweep root at most (subdir b4_s640_amp1)
MAX_SMALL_BYTES = 1 << 20  # point.json, status.json, sweep_plan.json
MAX_RECORD_BYTES = 256 << 20  # a sweep.json (a point's profile: limits.MAX_PROFILE_BYTES)
# A point's status: `ok` (a profile; `reused` when a resumed sweep kept it), `failed`,
# `interrupted` (Ctrl-C or SIGTERM stopped it) or `missing` (planned, never started).
STATUSES = ("ok", "failed", "interrupted", "missing")
HEADLINE = (
    "img_per_s",
    "step_ms",
    "latency_p50_ms",
    "peak_vram_mb",
    "memory_pressure",
    "cpu_wait_frac",
    "contended",
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
MISSING: dict[str, Any] = {"status": "missing", "reason": "not run yet", "code": "missing"}
OUTSIDE = "outside"  # the code of a point whose files lead outside the sweep folder


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _loads(text: str | bytes) -> Any:
    """json.loads without NaN or infinity, which the record could not be written back with."""
    return json.loads(text, parse_float=_finite, parse_constant=_finite)


def _read_small_json(path: Path, max_bytes: int) -> Any:
    """The JSON at `path` when it is a regular file of at most `max_bytes` (no FIFO, device or
    folder is opened); None otherwise or when it does not parse."""
    try:
        with open_regular(str(path), max_bytes) as handle:  # no FIFO, device or folder opened
            raw = handle.read(max_bytes + 1)
        return None if len(raw) > max_bytes else _loads(raw)
    except (OSError, ValueError, RecursionError, ProfileError):
        return None


def read_json(path: Path, max_bytes: int = MAX_SMALL_BYTES) -> dict[str, Any]:
    """The JSON object at `path`, or {} when it is absent, unreadable, too large or not one."""
    data = _read_small_json(path, max_bytes)
    return data if isinstance(data, dict) else {}


def inside(root: Path, relative: object) -> Path | None:
    """`root / relative` with symlinks resolved, when it is a relative path that stays inside
    `root`; None for anything else (not a string, absolute, a `..` or a link leading out)."""
    if not isinstance(relative, str) or not relative or Path(relative).is_absolute():
        return None
    try:
        base = root.resolve()
        target = (base / relative).resolve()
    except (OSError, ValueError):  # a NUL byte, a link loop
        return None
    return target if target.is_relative_to(base) else None


def is_request(data: object) -> bool:
    """Whether `data` is a `point.json` this tool wrote."""
    return isinstance(data, dict) and isinstance(data.get("config"), dict)


def is_status(data: object) -> bool:
    """Whether `data` is a `status.json` this tool wrote."""
    return isinstance(data, dict) and data.get("status") in STATUSES


def is_plan(data: object) -> bool:
    """Whether `data` is a `sweep_plan.json` this tool wrote."""
    return (
        isinstance(data, dict)
        and data.get("schema") == PLAN_SCHEMA
        and isinstance(data.get("points"), dict)
    )


def is_sweep_record(data: object) -> bool:
    """Whether `data` is a `sweep.json` this tool wrote."""
    return (
        isinstance(data, dict)
        and data.get("schema") == SWEEP_SCHEMA
        and isinstance(data.get("points"), dict)
    )


def _object(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _outside(what: str) -> dict[str, Any]:
    return {"status": "failed", "reason": f"{what} outside the sweep folder", "code": OUTSIDE}


def _blank(status: dict[str, Any], config: dict[str, Any], overrides: object) -> dict[str, Any]:
    return {
        "status": status.get("status", "failed"),
        "reason": status.get("reason") or None,
        "code": status.get("code") or None,
        "overrides": overrides if isinstance(overrides, list) else [],
        "batch": config.get("batch"),
        "imgsz": config.get("imgsz"),
        "amp": config.get("amp"),
        "threads": config.get("threads"),  # --threads / a threads axis; None: torch's default
        "amp_effective": None,  # what the profile says ran: AMP/--half has no effect on a CPU
        "device_memory_mb": None,  # the measured device's memory (CUDA), the memory chart's limit
        "profile": None,
        "metrics": {},
        "verdict": None,
        "reused": status.get("reused") is True,
    }


def _within(base: Path, path: Path) -> bool:
    try:
        return path.resolve().is_relative_to(base.resolve())
    except (OSError, ValueError):
        return False


def point_entry(folder: Path, root: Path | None = None) -> dict[str, Any]:
    """One point's row of the sweep record, read from its folder. The folder and its files must
    lie inside `root` (default: the folder itself) and its profile inside the folder."""
    base = folder if root is None else root
    request_path, status_path = folder / REQUEST_FILE, folder / STATUS_FILE
    for path in (folder, request_path, status_path):
        if not _within(base, path):
            return _blank(_outside(path.name if path != folder else "point folder"), {}, [])
    request = read_json(request_path)
    config = _object(request, "config")
    overrides = request.get("overrides")
    if not request and not status_path.exists():
        return _blank(MISSING, config, overrides)
    status = read_json(status_path) or NO_STATUS
    entry = _blank(status, config, status.get("overrides") if overrides is None else overrides)
    entry |= {key: status[key] for key in TIMING if key in status}
    if entry["status"] != "ok":
        return entry
    profile_path = inside(folder, status.get("profile"))
    if profile_path is None:
        return entry | _outside("profile path") | {"reused": False}
    raw = read_json(profile_path, MAX_PROFILE_BYTES)
    metrics = raw.get("metrics")
    if not isinstance(metrics, dict):
        lost = f"profile missing or unreadable: {status.get('profile')}"
        return entry | {"status": "failed", "reason": lost, "code": "no_profile", "reused": False}
    verdict = _object(raw, "verdict")
    entry["profile"] = str(profile_path)
    entry["metrics"] = {k: metrics.get(k) for k in HEADLINE}
    entry["verdict"] = verdict.get("bound") or metrics.get("bound")
    entry["amp_effective"] = _object(raw, "run").get("amp")
    entry["device_memory_mb"] = _memory_mb(_object(raw, "environment").get("device_memory_bytes"))
    return entry


def _memory_mb(num_bytes: object) -> float | None:
    """Bytes as MB (10**6, as `peak_vram_mb`) to 0.1; None when not a positive count."""
    if isinstance(num_bytes, bool) or not isinstance(num_bytes, int) or num_bytes <= 0:
        return None
    return round(num_bytes / 1e6, 1)


def point_folders(root: Path, max_depth: int = MAX_DEPTH) -> list[Path]:
    """The folders under `root` (itself included) that hold a `point.json`, sorted; hidden
    folders (Hydra's `.hydra`) and symlinked folders are not entered."""
    found = []
    base = len(root.parts)
    for here, dirs, files in os.walk(root):
        depth = len(Path(here).parts) - base
        dirs[:] = [] if depth >= max_depth else [d for d in dirs if not d.startswith(".")]
        if REQUEST_FILE in files:
            found.append(Path(here))
    return sorted(found)


def _name(root: Path, folder: Path) -> str:
    return folder.relative_to(root).as_posix() if folder != root else folder.name


def collect_points(root: Path, folders: list[Path]) -> dict[str, dict[str, Any]]:
    """The rows of the sweep record for point `folders` under `root`, keyed by their path
    relative to it."""
    return {_name(root, f): point_entry(f, root) for f in folders}


def read_plan(root: Path) -> dict[str, list[str]] | None:
    """The points of the grid in `root`'s `sweep_plan.json`, in launch order: folder (relative
    to `root`) -> the job's overrides; None without a readable plan."""
    data = read_json(root / PLAN_FILE)
    if not is_plan(data):
        return None
    return {
        str(name): [str(o) for o in job] if isinstance(job, list) else []
        for name, job in data["points"].items()
    }


def collect_sweep(root: Path, only: list[Path] | None = None) -> dict[str, dict[str, Any]]:
    """The rows of the sweep record: the planned points when `root` holds a plan (a planned
    point never started is `missing`, with the plan's overrides), else `only`, else every point
    folder found."""
    plan = read_plan(root)
    if plan is None:
        folders = point_folders(root) if only is None else [Path(f).resolve() for f in only]
        return collect_points(root, folders)
    rows: dict[str, dict[str, Any]] = {}
    for name, overrides in plan.items():
        folder = inside(root, name)
        if folder is None:
            rows[name] = _blank(_outside("point folder"), {}, overrides)
            continue
        row = point_entry(folder, root)
        if row["status"] == "missing":
            row["overrides"] = overrides
        rows[name] = row
    return rows


def read_sweep_record(record_path: Path) -> dict[str, Any]:
    """A `sweep.json` read back; AnalysisError (exit 1) when it is not a sweep record."""
    try:
        with open_regular(str(record_path), MAX_RECORD_BYTES) as handle:
            data = _loads(handle.read(MAX_RECORD_BYTES + 1))
    except ProfileError as err:  # no regular file, or too large
        raise AnalysisError(f"failed to read sweep {record_path}: {err.message}") from err
    except (OSError, ValueError, RecursionError) as err:
        raise AnalysisError(f"failed to read sweep {record_path}: {err}") from err
    if not isinstance(data, dict) or not isinstance(data.get("points"), dict):
        raise AnalysisError(f"failed to read sweep {record_path}: not a sweep record (no points)")
    for name, entry in data["points"].items():
        if not isinstance(entry, dict):
            raise AnalysisError(f"failed to read sweep {record_path}: point {name!r} is no object")
    if data.get("schema", SWEEP_SCHEMA) != SWEEP_SCHEMA:
        raise AnalysisError(
            f"failed to read sweep {record_path}: unknown schema {data['schema']!r}",
            hint=f"this libreyolo reads {SWEEP_SCHEMA}",
        )
    return data
