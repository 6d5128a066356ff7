"""One sweep file at a time: the names of a sweep's files, how to tell ours from someone else's
(`is_request`, `is_status`, `is_plan`, `is_sweep_record`), and the typed readers
(`read_request`, `read_status`, `read_plan`, `read_sweep_record`, `read_tune_record`): each
file read bounded (a regular file, at most `limits.MAX_SMALL_BYTES` or `MAX_RECORD_BYTES`, no
NaN), checked against its struct's rules (`sweep_model.py`, `tune_model.py`), then built by the
converter.

Must not: import torch, numpy, Hydra or OmegaConf (readers run on a laptop), print, or write.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path

from libreyolo.document.convert import ConversionError, convert
from libreyolo.document.json_value import JsonObject, JsonValue
from libreyolo.document.limits import MAX_RECORD_BYTES, MAX_SMALL_BYTES, open_regular
from libreyolo.document.rules import field_problem, shown
from libreyolo.document.sweep_model import (
    PLAN_SCHEMA,
    REQUEST_SCHEMA,
    STATUS_SCHEMA,
    STATUSES,
    SWEEP_SCHEMA,
    PointRequest,
    PointStatus,
    SweepPlan,
    SweepRecord,
)
from libreyolo.document.sweep_validate import HINT, TUNE_HINT, check_record, tune_problem
from libreyolo.document.tune_model import TUNE_SCHEMA, TuneRecord
from libreyolo.errors import AnalysisError, ProfileError

REQUEST_FILE = "point.json"  # a point's request: PointRequest
STATUS_FILE = "status.json"  # a point's outcome: PointStatus
LOG_FILE = "point.log"  # an isolated point's stderr, also relayed to the sweep's stderr
PLAN_FILE = "sweep_plan.json"  # the grid, written before the first point: SweepPlan
SWEEP_FILE = "sweep.json"  # the sweep record at the sweep root: SweepRecord
CHART_FILE = "sweep.png"  # the throughput chart next to it
PAGE_FILE = "sweep.html"  # the sweep's report page next to it
TUNE_FILE = "tune.json"  # hydra/sweeper=tune: the search and its answer: TuneRecord
TUNED_CONFIG = "tuned.yaml"  # training: the recommended settings as a config file
MAX_DEPTH = 3  # point folders sit this deep under the sweep root at most (subdir b4_s640_amp1)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _loads(text: str | bytes) -> JsonValue:
    """json.loads without NaN or infinity, which the record could not be written back with."""
    value: JsonValue = json.loads(text, parse_float=_finite, parse_constant=_finite)
    return value


def read_small_bytes(path: Path, max_bytes: int) -> bytes | None:
    """The bytes at `path` when it is a regular file of at most `max_bytes` (no FIFO, device
    or folder is opened); None otherwise."""
    try:
        with open_regular(str(path), max_bytes) as handle:  # no FIFO, device or folder opened
            raw = handle.read(max_bytes + 1)
    except (OSError, ProfileError):
        return None
    return None if len(raw) > max_bytes else raw


def parse_object(raw: bytes) -> JsonObject:
    """The JSON object `raw` holds, or {} when it does not parse or is not one."""
    try:
        data = _loads(raw)
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def read_json(path: Path, max_bytes: int = MAX_SMALL_BYTES) -> JsonObject:
    """The JSON object at `path`, or {} when it is absent, unreadable, too large or not one."""
    raw = read_small_bytes(path, max_bytes)
    return {} if raw is None else parse_object(raw)


def member(data: JsonObject, key: str) -> JsonObject:
    """The object `data[key]`, or {} when it is absent or no object (a raw file, narrowed)."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def inside(root: Path, relative: object) -> Path | None:
    """`root / relative` with symlinks resolved, when it is a relative path that stays inside
    `root`; None for anything else (not a string, absolute, a `..` or a link leading out)."""
    if not isinstance(relative, str) or not relative or Path(relative).is_absolute():
        return None
    try:
        base = root.resolve()
        target = (base / relative).resolve()
    except (OSError, ValueError, RuntimeError):  # a NUL byte, a link loop (RuntimeError <3.13)
        return None
    return target if target.is_relative_to(base) else None


def check_contained(root: Path, name: str) -> None:
    """AnalysisError (exit 1) when the sweep folder's own file `name` (`sweep.json`,
    `sweep_plan.json`, `tune.json`) is a link leading outside `root` (or in a loop): read, it
    would put another folder's record, grid or search in this sweep's place."""
    path = root / name
    if os.path.lexists(path) and inside(root, name) is None:
        raise AnalysisError(
            f"failed to read {path}: it is a link to no file inside the sweep folder",
            hint="replace the link with the file itself",
        )


def is_request(data: JsonValue) -> bool:
    """Whether `data` is a `point.json` this tool wrote (tagged, or from before the tag)."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("config"), dict)
        and data.get("schema", REQUEST_SCHEMA) == REQUEST_SCHEMA
    )


def is_status(data: JsonValue) -> bool:
    """Whether `data` is a `status.json` this tool wrote (tagged, or from before the tag)."""
    return (
        isinstance(data, dict)
        and data.get("status") in STATUSES
        and data.get("schema", STATUS_SCHEMA) == STATUS_SCHEMA
    )


def is_plan(data: JsonValue) -> bool:
    """Whether `data` is a `sweep_plan.json` this tool wrote."""
    return (
        isinstance(data, dict)
        and data.get("schema") == PLAN_SCHEMA
        and isinstance(data.get("points"), dict)
    )


def is_sweep_record(data: JsonValue) -> bool:
    """Whether `data` is a `sweep.json` this tool wrote."""
    return (
        isinstance(data, dict)
        and data.get("schema") == SWEEP_SCHEMA
        and isinstance(data.get("points"), dict)
    )


def in_file(name: str) -> Callable[[str], str]:
    """How a message names a field of the file `name`: `status.json point_s`."""
    return lambda key: f"{name} {key}"


def read_request(path: Path) -> PointRequest | None:
    """The `point.json` at `path`; None when it is absent, not ours or holds a value no sweep
    writes."""
    data = read_json(path)
    if not is_request(data) or field_problem(data, PointRequest, str):
        return None
    try:
        return convert(data, PointRequest)
    except ConversionError:
        return None


def read_status(path: Path) -> PointStatus | None:
    """The `status.json` at `path`; None when it is absent, not ours or holds a value no sweep
    writes."""
    data = read_json(path)
    if not is_status(data) or field_problem(data, PointStatus, str):
        return None
    return as_status(data)


def as_status(data: JsonObject) -> PointStatus | None:
    """A checked status.json's struct (its overrides null: none recorded)."""
    known = {k: v for k, v in data.items() if not (k == "overrides" and v is None)}
    try:
        return convert(known, PointStatus)
    except ConversionError:
        return None


def read_plan(root: Path) -> SweepPlan | None:
    """`root`'s `sweep_plan.json`: the points of the grid in launch order, folder (relative to
    `root`) -> the job's overrides; None without a plan of ours (absent, another tool's, or a
    value no sweep writes: a point name is a folder path)."""
    data = read_json(root / PLAN_FILE)
    if not is_plan(data) or field_problem(data, SweepPlan, str):
        return None
    return convert(data, SweepPlan)


def _read_document(path: Path, what: str) -> JsonValue:
    """The JSON at `path`, a regular file of at most MAX_RECORD_BYTES; AnalysisError (exit 1)
    naming the file for anything else (a device, too large, not JSON, NaN, too deep)."""
    try:
        with open_regular(str(path), MAX_RECORD_BYTES) as handle:
            return _loads(handle.read(MAX_RECORD_BYTES + 1))
    except ProfileError as err:  # no regular file, or too large
        raise AnalysisError(f"failed to read {what} {path}: {err.message}") from err
    except (OSError, ValueError, RecursionError) as err:
        raise AnalysisError(f"failed to read {what} {path}: {err}") from err


def read_sweep_record(record_path: Path) -> SweepRecord:
    """A `sweep.json` read back; AnalysisError (exit 1) when it is not a sweep record or holds a
    value no sweep writes (`sweep_validate.check_record`: the field is named)."""
    data = _read_document(record_path, "sweep")
    if not isinstance(data, dict) or not isinstance(data.get("points"), dict):
        raise AnalysisError(f"failed to read sweep {record_path}: not a sweep record (no points)")
    tag = data.get("schema", SWEEP_SCHEMA)  # a record from before the tag reads as v1
    if tag != SWEEP_SCHEMA:
        raise AnalysisError(
            f"failed to read sweep {record_path}: unknown schema {shown(tag)}",
            hint=f"this libreyolo reads {SWEEP_SCHEMA}",
        )
    check_record(data, origin=str(record_path))
    try:
        return convert(data | {"schema": SWEEP_SCHEMA}, SweepRecord)
    except ConversionError as err:  # the rules cover every field: a rule that misses one
        raise AnalysisError(
            f"failed to read sweep {record_path}: invalid sweep record: {err}", hint=HINT
        ) from err


def read_tune_record(path: Path) -> TuneRecord | None:
    """The `tune.json` at `path`; None when there is none (a plain grid). AnalysisError
    (exit 1) naming the file when it is not ours (no `libreyolo.tune/v1` tag) and naming the
    field when it holds a value no search writes (`sweep_validate.tune_problem`)."""
    if not os.path.lexists(path):  # a dangling link is a file that cannot be read, not none
        return None
    data = _read_document(path, "tune record")
    if not isinstance(data, dict) or "schema" not in data:
        raise AnalysisError(
            f"failed to read tune record {path}: not a tune record (no schema tag)",
            hint=f"libreyolo-sweep -m hydra/sweeper=tune writes {TUNE_SCHEMA}",
        )
    if data["schema"] != TUNE_SCHEMA:
        raise AnalysisError(
            f"failed to read tune record {path}: unknown schema {shown(data['schema'])}",
            hint=f"this libreyolo reads {TUNE_SCHEMA}",
        )
    problem = tune_problem(data)
    if problem:
        raise AnalysisError(
            f"failed to read tune record {path}: invalid tune record: {problem}", hint=TUNE_HINT
        )
    try:
        return convert(data, TuneRecord)
    except ConversionError as err:  # the rules cover every field: a rule that misses one
        raise AnalysisError(
            f"failed to read tune record {path}: invalid tune record: {err}", hint=TUNE_HINT
        ) from err
