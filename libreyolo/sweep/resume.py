"""Resuming a sweep: whether a point measured before stands for the same point now.

A recorded point stands for a new one when its `point.json` asks for the same config and
overrides (`sweep.resume` aside), its status is ok, and its profile, the measurement itself,
records the same: the same overrides, and a resolved config equal to the request in every key
but where the point measured (`project`, `device`, `sweep`), `half` in infer mode (the sweep's
`amp` sets it) and an imgsz the collector rounded up to the stride. `point.json` alone is a
claim: an edited or copied one would otherwise hand a profile of other settings to the sweep.

Must not: measure, or write anything.
"""

from __future__ import annotations

import json
from pathlib import Path

from libreyolo.document.json_value import JsonObject, JsonValue
from libreyolo.document.limits import MAX_PROFILE_BYTES
from libreyolo.document.sweep_files import (
    REQUEST_FILE,
    STATUS_FILE,
    inside,
    point_entry,
    read_json,
    read_request,
    read_status,
)
from libreyolo.document.sweep_model import PointRequest, PointStatus

RESUME_KEY = "sweep.resume"  # left out when matching a recorded point against a new one
PER_POINT = ("project", "device", "sweep")  # set by run_point for where the point measures
MAX_STRIDE = 64  # a recorded imgsz may exceed the requested one by less: rounded to the stride


def _kept(overrides: JsonValue) -> list[str]:
    """`overrides` without `sweep.resume` (turning resume off or on changes no measurement)."""
    given = overrides if isinstance(overrides, list) else []
    return [str(o) for o in given if str(o).split("=", 1)[0] != RESUME_KEY]


def _object(value: JsonValue) -> JsonObject:
    return value if isinstance(value, dict) else {}


def matching_key(request: PointRequest) -> str:
    """What must match for a recorded point to stand for a new one: its config and overrides,
    as JSON, without `sweep.resume`."""
    config = dict(request.config)
    config["sweep"] = {k: v for k, v in _object(config.get("sweep")).items() if k != "resume"}
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
        if key != "imgsz" and resolved.get(key) != value:
            return False
    return True


def reusable(point_dir: Path, request: PointRequest) -> PointStatus | None:
    """The recorded status of `point_dir` when it was measured with `request`'s settings and
    its profile is complete (an ok status, a profile inside the folder that reads back)."""
    recorded = read_request(point_dir / REQUEST_FILE)
    if recorded is None or matching_key(recorded) != matching_key(request):
        return None
    if point_entry(point_dir).status != "ok":
        return None
    status = read_status(point_dir / STATUS_FILE)
    if status is None:
        return None
    profile_path = inside(point_dir, status.profile)
    profile = {} if profile_path is None else read_json(profile_path, MAX_PROFILE_BYTES)
    return status if measured_as_requested(profile, request) else None
