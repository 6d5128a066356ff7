"""One sweep point: measure a resolved config into its own folder and record how it went.

Role: `run_point` writes `point.json` (resolved config + overrides), measures in a fresh child
process by default (`python -m libreyolo.sweep.point point.json`, hydra-notes §9.3) or in this
process, and leaves `status.json` ({status: ok|failed, reason, code, overrides, profile}).
In `infer` mode the sweep's `amp` key means `--half`.

Must not: raise for an expected failure (a `ProfileError` such as a bad value or a dataset too
small, or out of memory): it is recorded as `failed` with its reason and the sweep goes on.
Must not hand a `DictConfig` to the child: the request is plain JSON.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from libreyolo.config.schema import (
    AmpDtype,
    DatasetConfig,
    DeviceConfig,
    Mode,
    ModelConfig,
    ProfileConfig,
    WindowConfig,
)
from libreyolo.errors import ProfileError

REQUEST_FILE = "point.json"
STATUS_FILE = "status.json"
_NESTED: dict[str, type[Any]] = {
    "model": ModelConfig,
    "dataset": DatasetConfig,
    "device": DeviceConfig,
    "window": WindowConfig,
}


def config_from_dict(data: dict[str, Any]) -> ProfileConfig:
    """Rebuild the frozen `ProfileConfig` from `as_plain_dict` output."""
    kwargs = {k: _NESTED[k](**v) if k in _NESTED else v for k, v in data.items()}
    kwargs["mode"] = Mode(kwargs.get("mode", Mode.run))
    kwargs["amp_dtype"] = AmpDtype(kwargs.get("amp_dtype", AmpDtype.float16))
    return ProfileConfig(**kwargs)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _status(
    request: dict[str, Any], status: str, *, reason: str = "", code: str = "", profile: str = ""
) -> dict[str, Any]:
    return {
        "status": status,
        "reason": reason,
        "code": code,
        "overrides": list(request.get("overrides", [])),
        "profile": profile or None,
    }


def _is_oom(err: BaseException) -> bool:
    oom = getattr(sys.modules.get("torch"), "OutOfMemoryError", None)
    return (oom is not None and isinstance(err, oom)) or (
        isinstance(err, RuntimeError) and "out of memory" in str(err).lower()
    )


def measure_request(request_path: Path) -> dict[str, Any]:
    """Measure the point described by `request_path`; write and return its status record."""
    request = json.loads(request_path.read_text(encoding="utf-8"))
    point_dir = request_path.parent
    try:
        record = _measure(request, point_dir)
    except ProfileError as err:
        record = _status(request, "failed", reason=err.message, code=err.code)
    except RuntimeError as err:
        if not _is_oom(err):
            raise
        record = _status(request, "failed", reason=f"out of memory: {err}", code="oom")
    _write_json(point_dir / STATUS_FILE, record)
    return record


def _measure(request: dict[str, Any], point_dir: Path) -> dict[str, Any]:
    from libreyolo.measure.from_config import measure_config

    cfg = config_from_dict(request["config"])
    cfg = dataclasses.replace(cfg, project=str(point_dir))
    if cfg.mode == Mode.infer:
        cfg = dataclasses.replace(cfg, half=cfg.amp)  # a sweep's `amp` means --half for infer
    _, path = measure_config(cfg, list(request.get("overrides", [])), None)
    return _status(request, "ok", profile=str(path.relative_to(point_dir)))


def run_point(
    cfg_dict: dict[str, Any],
    point_dir: str | Path,
    *,
    isolate: bool = True,
    overrides: list[str] | None = None,
) -> dict[str, Any]:
    """Measure one point into `point_dir` and return its status record (never raises for an
    expected failure). `isolate` runs the measurement in a fresh child process."""
    point_dir = Path(point_dir).resolve()
    point_dir.mkdir(parents=True, exist_ok=True)
    request = {"config": cfg_dict, "overrides": list(overrides or [])}
    request_path = point_dir / REQUEST_FILE
    _write_json(request_path, request)
    (point_dir / STATUS_FILE).unlink(missing_ok=True)
    if not isolate:
        return measure_request(request_path)
    child = subprocess.run(
        [sys.executable, "-m", "libreyolo.sweep.point", str(request_path)],
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    if child.stderr:
        sys.stderr.write(child.stderr)
    status_path = point_dir / STATUS_FILE
    if status_path.is_file():
        return json.loads(status_path.read_text(encoding="utf-8"))
    lines = [line for line in child.stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else "no output"
    record = _status(
        request,
        "failed",
        reason=f"child process exited {child.returncode}: {last}",
        code="crashed",
    )
    _write_json(status_path, record)
    return record


if __name__ == "__main__":
    measure_request(Path(sys.argv[1]))
