"""Resuming a sweep: whether a point measured before stands for the same point now.

Must not: measure, or write anything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from libreyolo.document.sweep_files import (
    REQUEST_FILE,
    STATUS_FILE,
    is_request,
    point_entry,
    read_json,
)

RESUME_KEY = "sweep.resume"  # left out when matching a recorded point against a new one


def matching_key(request: dict[str, Any]) -> str:
    """What must match for a recorded point to stand for a new one: its config and overrides,
    as JSON, without `sweep.resume` (turning resume off or on changes no measurement)."""
    config = dict(request.get("config") or {})
    config["sweep"] = {k: v for k, v in (config.get("sweep") or {}).items() if k != "resume"}
    kept = [o for o in request.get("overrides") or [] if str(o).split("=", 1)[0] != RESUME_KEY]
    return json.dumps({"config": config, "overrides": kept}, sort_keys=True, default=str)


def reusable(point_dir: Path, request: dict[str, Any]) -> dict[str, Any] | None:
    """The recorded status of `point_dir` when it was measured with `request`'s settings and
    its profile is complete (an ok status, a profile inside the folder that reads back)."""
    recorded = read_json(point_dir / REQUEST_FILE)
    if not is_request(recorded) or matching_key(recorded) != matching_key(request):
        return None
    if point_entry(point_dir)["status"] != "ok":
        return None
    return read_json(point_dir / STATUS_FILE)
