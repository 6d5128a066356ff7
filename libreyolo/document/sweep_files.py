"""A sweep's files: the point folders (`point.json`, `status.json`, the profile), the grid
`sweep_plan.json` written when the sweep starts and the sweep record `sweep.json` at the end.

Role: the names of those files and how to tell ours from someone else's (`is_request`,
`is_status`, `is_plan`, `is_sweep_record`); `collect_sweep` reads the planned (else the found)
point folders into the rows of the sweep record, a planned point without a folder being
`missing`; `read_sweep_record` reads a `sweep.json` back, refusing one that is not a record or
holds a value no sweep writes (`sweep_validate`). Every value a row takes from a point's files
passes the same rules: one that does not makes the point `failed` (code `invalid`, the file and
field in its reason) and is not carried into the row. Every path taken from these files stays
inside the sweep folder (symlinks resolved): a point folder or a profile that leads elsewhere
makes that point `failed`, and nothing outside is read. Only small regular JSON files are read;
nothing is written here (the sweep's writers do that).

Must not: import torch, numpy, Hydra or OmegaConf (readers run on a laptop), or print.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from libreyolo.document.limits import MAX_PROFILE_BYTES, open_regular
from libreyolo.document.sweep_validate import (
    MAX_NAME_CHARS,
    MAX_PROFILE_INT,
    METRIC_RULES,
    POINT_RULES,
    STATUSES,
    TIMING_RULES,
    check_record,
    count,
    first_problem,
    shown,
)
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
HEADLINE = tuple(METRIC_RULES)  # the metrics a row copies from its point's profile
TIMING = tuple(TIMING_RULES)  # copied from status.json
AXES = ("batch", "imgsz", "amp", "threads")  # copied from point.json's config
# what a row copies from status.json, checked before it is
STATUS_KEYS = ("status", "reason", "code", "profile", *TIMING)
_MEMORY_BYTES = count(0, MAX_PROFILE_INT)
NO_STATUS: dict[str, Any] = {
    "status": "failed",
    "reason": "no status recorded (the point stopped before it finished)",
    "code": "crashed",
    "profile": None,
}
MISSING: dict[str, Any] = {"status": "missing", "reason": "not run yet", "code": "missing"}
OUTSIDE = "outside"  # the code of a point whose files lead outside the sweep folder
INVALID = "invalid"  # the code of a point whose files hold a value no sweep writes


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


def _invalid(problem: str, config: dict[str, Any], overrides: object) -> dict[str, Any]:
    """The row of a point whose files hold an unusable value: failed, naming it; `config` and
    `overrides` are carried only once they passed the rules."""
    return _blank({"status": "failed", "reason": problem, "code": INVALID}, config, overrides)


def _request_problem(config: dict[str, Any], overrides: object, where: str) -> str | None:
    """The first unusable value of point.json's config axes, or of the overrides (`where`
    names the file they come from)."""
    checks = [
        (f"{REQUEST_FILE} config.{k}", config[k], POINT_RULES[k]) for k in AXES if k in config
    ]
    if overrides is not None:
        checks.append((f"{where} overrides", overrides, POINT_RULES["overrides"]))
    return first_problem(checks)


def _status_problem(status: dict[str, Any]) -> str | None:
    return first_problem(
        (f"{STATUS_FILE} {key}", status[key], POINT_RULES[key])
        for key in STATUS_KEYS
        if key in status
    )


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
        return _blank(MISSING, {}, [])
    status = read_json(status_path) or NO_STATUS
    where = REQUEST_FILE if overrides is not None else STATUS_FILE
    overrides = status.get("overrides") if overrides is None else overrides
    problem = _request_problem(config, overrides, where)
    status_problem = _status_problem(status)
    if problem and not status_problem and status.get("status") not in ("ok", None):
        # A request the measurement refused (`batch=-5`): its own reason says why; the row
        # keeps none of the unusable settings.
        return _blank(status, {}, [])
    if problem:
        return _invalid(problem, {}, [])
    if status_problem:
        return _invalid(status_problem, config, overrides)
    entry = _blank(status, config, overrides)
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
    found = _profile_values(raw, metrics, str(status.get("profile")))
    if isinstance(found, str):
        return _invalid(found, config, overrides)
    return entry | found | {"profile": str(profile_path)}


def _profile_values(
    raw: dict[str, Any], metrics: dict[str, Any], where: str
) -> dict[str, Any] | str:
    """What a row takes from its point's profile (`where`, relative to the point folder), or
    the first value of those no sweep writes."""
    values = {
        "metrics": {k: metrics.get(k) for k in HEADLINE},
        "verdict": _object(raw, "verdict").get("bound") or metrics.get("bound"),
        "amp_effective": _object(raw, "run").get("amp"),
    }
    memory = _object(raw, "environment").get("device_memory_bytes")
    problem = first_problem(
        [
            (f"{where} metrics", values["metrics"], POINT_RULES["metrics"]),
            (f"{where} verdict.bound", values["verdict"], POINT_RULES["verdict"]),
            (f"{where} run.amp", values["amp_effective"], POINT_RULES["amp_effective"]),
            (f"{where} environment.device_memory_bytes", memory, _MEMORY_BYTES),
        ]
    )
    return problem or values | {"device_memory_mb": _memory_mb(memory)}


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
    if not is_plan(data) or any(len(name) > MAX_NAME_CHARS for name in data["points"]):
        return None  # no plan of ours: a point name is a folder path
    return {
        str(name): [o for o in job if isinstance(o, str)] if isinstance(job, list) else []
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
    """A `sweep.json` read back; AnalysisError (exit 1) when it is not a sweep record or holds a
    value no sweep writes (`sweep_validate.check_record`: the field is named)."""
    try:
        with open_regular(str(record_path), MAX_RECORD_BYTES) as handle:
            data = _loads(handle.read(MAX_RECORD_BYTES + 1))
    except ProfileError as err:  # no regular file, or too large
        raise AnalysisError(f"failed to read sweep {record_path}: {err.message}") from err
    except (OSError, ValueError, RecursionError) as err:
        raise AnalysisError(f"failed to read sweep {record_path}: {err}") from err
    if not isinstance(data, dict) or not isinstance(data.get("points"), dict):
        raise AnalysisError(f"failed to read sweep {record_path}: not a sweep record (no points)")
    if data.get("schema", SWEEP_SCHEMA) != SWEEP_SCHEMA:
        raise AnalysisError(
            f"failed to read sweep {record_path}: unknown schema {shown(data['schema'])}",
            hint=f"this libreyolo reads {SWEEP_SCHEMA}",
        )
    check_record(data, origin=str(record_path))
    return data
