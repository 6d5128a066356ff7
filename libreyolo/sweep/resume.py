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


def _profile_matches(point_dir: Path, status: PointStatus, request: PointRequest) -> bool:
    profile_path = inside(point_dir, status.profile)
    profile = {} if profile_path is None else read_json(profile_path, MAX_PROFILE_BYTES)
    return measured_as_requested(profile, request)


def reusable(point_dir: Path, request: PointRequest, *, bounds: bool = False) -> PointStatus | None:
    """The recorded status of `point_dir` when it was measured with `request`'s settings and
    its profile is complete (an ok status, a profile inside the folder that reads back); with
    `bounds`, also when it was recorded as not fitting (module docstring)."""
    recorded = read_request(point_dir / REQUEST_FILE)
    if recorded is None or matching_key(recorded) != matching_key(request):
        return None
    status = read_status(point_dir / STATUS_FILE)
    if bounds and status is not None and status.status == "failed" and status.code in BOUNDS:
        return (
            status if not status.profile or _profile_matches(point_dir, status, request) else None
        )
    if point_entry(point_dir).status != "ok" or status is None:
        return None
    return status if _profile_matches(point_dir, status, request) else None
