"""Resuming a sweep: whether a point measured before stands for the same point now.

A recorded point stands for a new one when its `point.json` asks for the same config and
overrides (`sweep.resume` aside, and the tune search's settings, `tune.*` but
`tune.memory_budget_mb`: how a search chooses its points changes no measurement), its status
is ok, and its profile, the measurement itself, records the same: the same overrides, and a
resolved config equal to the request in every key but where the point measured (`project`,
`device`, `sweep`), `half` in infer mode (the sweep's `amp` sets it), the search's settings and
an imgsz the collector rounded up to the stride. `point.json` alone is a claim: an edited or
copied one would otherwise hand a profile of other settings to the sweep. For a tune search
(`bounds`), a point recorded failed with code `oom` or `over_budget` under the same request is
a bound it measured, and stands too (its profile, when it kept one, checked the same way).

The profile must also be the file the measurement wrote: `status.json` records its SHA-256
(`profile_sha256`, from `profile_sha256()`), and a profile whose bytes differ (edited, replaced,
copied from another point) is measured again. So is a point whose status records no digest (a
folder from before digests were recorded, or one edited to drop it: the two cannot be told
apart, and trusting either would let an edit through), and one whose `point.json` or
`status.json` is a symbolic link (never what the sweep writes). A point that looked done but
fails a check comes back with the reason (`Recorded.doubt`), for the sweep's `note:` line.

Must not: measure, or write anything.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from libreyolo.document.json_value import JsonObject, JsonValue
from libreyolo.document.limits import MAX_PROFILE_BYTES
from libreyolo.document.sweep_files import (
    REQUEST_FILE,
    STATUS_FILE,
    inside,
    parse_object,
    point_entry,
    read_request,
    read_small_bytes,
    read_status,
)
from libreyolo.document.sweep_model import PointRequest, PointStatus
from libreyolo.document.tune_model import BOUNDS

RESUME_KEY = "sweep.resume"  # left out when matching a recorded point against a new one
BUDGET_KEY = "memory_budget_mb"  # the one tune.* setting that changes a measurement
PER_POINT = ("project", "device", "sweep")  # set by run_point for where the point measures
MAX_STRIDE = 64  # a recorded imgsz may exceed the requested one by less: rounded to the stride


def _measures(override: str) -> bool:
    """Whether the override can change a measurement: not `sweep.resume`, nor a `tune.*`
    search setting but the memory budget."""
    key = override.split("=", 1)[0].lstrip("+~")
    return key != RESUME_KEY and (not key.startswith("tune.") or key == f"tune.{BUDGET_KEY}")


def _kept(overrides: JsonValue) -> list[str]:
    """`overrides` that can change a measurement (`_measures`)."""
    given = overrides if isinstance(overrides, list) else []
    return [str(o) for o in given if _measures(str(o))]


def _object(value: JsonValue) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _budget(tune: JsonValue) -> JsonObject:
    """The config's `tune` group reduced to what changes a measurement: the memory budget,
    when one is set (a config from before the group reads as none set)."""
    return {k: v for k, v in _object(tune).items() if k == BUDGET_KEY and v is not None}


def matching_key(request: PointRequest) -> str:
    """What must match for a recorded point to stand for a new one: its config and overrides,
    as JSON, without `sweep.resume`."""
    config = dict(request.config)
    config["sweep"] = {k: v for k, v in _object(config.get("sweep")).items() if k != "resume"}
    config["tune"] = _budget(config.get("tune"))
    kept = _kept(list(request.overrides))
    return json.dumps({"config": config, "overrides": kept}, sort_keys=True, default=str)


def _same_imgsz(requested: JsonValue, measured: JsonValue) -> bool:
    if requested == measured:
        return True
    if isinstance(requested, bool) or isinstance(measured, bool):
        return False
    if not isinstance(requested, int) or not isinstance(measured, int):
        return False
    return 0 < requested < measured < requested + MAX_STRIDE


def measured_as_requested(profile: JsonObject, request: PointRequest) -> bool:
    """Whether the raw `profile` records the settings `request` asks for (module docstring)."""
    run = _object(profile.get("run"))
    config = _object(run.get("config"))
    # `run.config` is the resolved config; files written before it was stored once kept it
    # under `run.config.resolved`, beside a flat copy of the collector's settings.
    resolved = config.get("resolved", config)
    if not isinstance(resolved, dict) or _kept(run.get("overrides")) != _kept(
        list(request.overrides)
    ):
        return False
    requested = request.config
    skipped = PER_POINT + (("half",) if requested.get("mode") == "infer" else ())
    for key, value in requested.items():
        if key in skipped:
            continue
        if key == "imgsz" and not _same_imgsz(value, resolved.get(key)):
            return False
        if key == "tune" and _budget(resolved.get(key)) != _budget(value):
            return False
        if key not in ("imgsz", "tune") and resolved.get(key) != value:
            return False
    return True


@dataclass(frozen=True, slots=True)
class Recorded:
    """What a point folder's record is worth to a resumed sweep: the status to keep (None:
    measure the point), and why a point recorded as done is measured again ("" when it is
    kept, or when nothing there claimed to be done)."""

    kept: PointStatus | None = None
    doubt: str = ""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def profile_sha256(path: Path) -> str | None:
    """The digest `status.json` records for the profile at `path` (SHA-256 of its bytes, hex);
    None when it cannot be read as a profile (no regular file, over the profile limit)."""
    data = read_small_bytes(path, MAX_PROFILE_BYTES)
    return None if data is None else _sha256(data)


def _doubt(point_dir: Path, status: PointStatus, request: PointRequest) -> str:
    """Why the point recorded in `point_dir` as done (`status`) cannot stand for `request`;
    "" when it can (module docstring)."""
    linked = [name for name in (REQUEST_FILE, STATUS_FILE) if (point_dir / name).is_symlink()]
    if linked:
        return f"its {linked[0]} is a symbolic link"
    if status.status == "ok":
        row = point_entry(point_dir)
        if row.status != "ok":
            return f"its record does not read back ({row.reason})"
    elif not status.profile:  # a bound found before measuring (out of memory): no profile
        return ""
    return _profile_doubt(point_dir, status, request)


def _profile_doubt(point_dir: Path, status: PointStatus, request: PointRequest) -> str:
    """Why the profile `status` names is not the measurement of `request` it claims to be;
    "" when it is: inside the point folder, the bytes `status` recorded, the settings asked."""
    path = inside(point_dir, status.profile)
    data = None if path is None else read_small_bytes(path, MAX_PROFILE_BYTES)
    if data is None:
        return f"its profile {status.profile} cannot be read inside the point folder"
    if status.profile_sha256 is None:
        return "its status.json records no profile digest (written before digests were, or edited)"
    if _sha256(data) != status.profile_sha256:
        return f"its profile {status.profile} changed since it was measured (its digest differs)"
    if not measured_as_requested(parse_object(data), request):
        return f"its profile {status.profile} records other settings than its point.json"
    return ""


def reusable(point_dir: Path, request: PointRequest, *, bounds: bool = False) -> Recorded:
    """What `point_dir`'s record is worth when the sweep would measure `request` there: kept
    when it was measured with `request`'s settings, its status is ok and its profile is the one
    measured (module docstring); with `bounds`, also when it was recorded as not fitting."""
    recorded = read_request(point_dir / REQUEST_FILE)
    if recorded is None or matching_key(recorded) != matching_key(request):
        return Recorded()  # another point's settings, or none: nothing claimed to be done
    status = read_status(point_dir / STATUS_FILE)
    if status is None:
        return Recorded()
    bound = bounds and status.status == "failed" and status.code in BOUNDS
    if status.status != "ok" and not bound:
        return Recorded()
    doubt = _doubt(point_dir, status, request)
    return Recorded(doubt=doubt) if doubt else Recorded(status)
