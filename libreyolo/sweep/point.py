"""One sweep point: measure a resolved config into its own folder and record how it went.

Role: `run_point` writes `point.json` (resolved config + overrides), takes the device lease
(`lease.py`: a free GPU, or the CPU), measures in a fresh child process (`python -m
libreyolo.sweep.point point.json`, hydra-notes §9.3) or in this process (`sweep.isolate=false`)
and leaves `status.json`: {status: ok|failed, reason, code, overrides, profile (the repeat
aggregate when window.repeat > 1), pid (the measuring process), held_device, lease_acquired_at,
lease_released_at (epoch s), lease_wait_s, measure_s (inside measure_config), point_s (the whole
point)}. In `infer` mode the sweep's `amp` key means `--half`.

Must not: raise for an expected failure (a `ProfileError` such as a bad value or a dataset too
small, or out of memory): it is recorded as `failed` with its reason and the sweep goes on.
Must not hand a `DictConfig` to the child: the request is plain JSON.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from libreyolo.config.schema import (
    AmpDtype,
    DatasetConfig,
    DeviceConfig,
    Mode,
    ModelConfig,
    ProfileConfig,
    SweepConfig,
    WindowConfig,
)
from libreyolo.document.sweep_files import REQUEST_FILE, STATUS_FILE
from libreyolo.errors import NoProfileError, ProfileError
from libreyolo.sweep.lease import Lease, device_lease

_NESTED: dict[str, type[Any]] = {
    "model": ModelConfig,
    "dataset": DatasetConfig,
    "device": DeviceConfig,
    "window": WindowConfig,
    "sweep": SweepConfig,
}
# Filled in by the measuring process (pid, measure_s) and by run_point (the rest).
TIMING_KEYS = (
    "pid",
    "held_device",
    "lease_acquired_at",
    "lease_released_at",
    "lease_wait_s",
    "measure_s",
    "point_s",
)


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
    } | dict.fromkeys(TIMING_KEYS)


def _is_oom(err: BaseException) -> bool:
    oom = getattr(sys.modules.get("torch"), "OutOfMemoryError", None)
    return (oom is not None and isinstance(err, oom)) or (
        isinstance(err, RuntimeError) and "out of memory" in str(err).lower()
    )


def measure_request(request_path: Path) -> dict[str, Any]:
    """Measure the point described by `request_path`; write and return its status record."""
    from libreyolo.measure.from_config import measure_config  # torch: before the clock starts

    request = json.loads(request_path.read_text(encoding="utf-8"))
    point_dir = request_path.parent
    clock: dict[str, float] = {}
    try:
        record = _measure(request, point_dir, measure_config, clock)
    except ProfileError as err:
        record = _status(request, "failed", reason=err.message, code=err.code)
    except RuntimeError as err:
        if not _is_oom(err):
            raise
        record = _status(request, "failed", reason=f"out of memory: {err}", code="oom")
    started = clock.get("start")
    record |= {
        "pid": os.getpid(),
        "held_device": request.get("held_device"),
        "measure_s": None if started is None else time.perf_counter() - started,
    }
    _write_json(point_dir / STATUS_FILE, record)
    return record


def _measure(
    request: dict[str, Any], point_dir: Path, measure_config: Any, clock: dict[str, float]
) -> dict[str, Any]:
    cfg = config_from_dict(request["config"])
    cfg = dataclasses.replace(cfg, project=str(point_dir))
    if request.get("device"):  # the leased GPU as this process numbers it
        cfg = dataclasses.replace(cfg, device=DeviceConfig(name=request["device"]))
    if cfg.mode == Mode.infer:
        cfg = dataclasses.replace(cfg, half=cfg.amp)  # a sweep's `amp` means --half for infer
    clock["start"] = time.perf_counter()
    _, path = measure_config(
        cfg, list(request.get("overrides", [])), None, held_device=request.get("held_device")
    )
    return _status(request, "ok", profile=str(path.relative_to(point_dir)))


def run_point(
    cfg_dict: dict[str, Any],
    point_dir: str | Path,
    *,
    isolate: bool | None = None,
    overrides: list[str] | None = None,
) -> dict[str, Any]:
    """Measure one point into `point_dir` under its device lease and return its status record
    (never raises for an expected failure). `isolate` (default: the config's `sweep.isolate`)
    runs the measurement in a fresh child process."""
    started = time.perf_counter()
    point_dir = Path(point_dir).resolve()
    point_dir.mkdir(parents=True, exist_ok=True)
    sweep = SweepConfig(**cfg_dict.get("sweep", {}))
    isolate = sweep.isolate if isolate is None else isolate
    request: dict[str, Any] = {"config": cfg_dict, "overrides": list(overrides or [])}
    request_path = point_dir / REQUEST_FILE
    _write_json(request_path, request)
    status_path = point_dir / STATUS_FILE
    status_path.unlink(missing_ok=True)
    device = str(cfg_dict.get("device", {}).get("name", "0"))
    waiting = time.monotonic()
    try:
        with device_lease(
            device, lock_dir=sweep.lock_dir, timeout_s=sweep.lease_timeout_s, gpus=sweep.gpus
        ) as lease:
            record = _measure_leased(request, request_path, lease, device, isolate)
        record |= {
            "held_device": lease.held_device,
            "lease_acquired_at": lease.acquired_at,
            "lease_released_at": time.time(),
            "lease_wait_s": lease.wait_s,
        }
    except NoProfileError as err:  # only the lease raises it: measuring records its failures
        record = _status(request, "failed", reason=err.message, code=err.code)
        record["lease_wait_s"] = time.monotonic() - waiting
    record["point_s"] = time.perf_counter() - started
    _write_json(status_path, record)
    return record


def _measure_leased(
    request: dict[str, Any], request_path: Path, lease: Lease, device: str, isolate: bool
) -> dict[str, Any]:
    request["held_device"] = lease.held_device
    request["device"] = lease.child_device(device) if isolate else lease.in_process_device(device)
    _write_json(request_path, request)
    if not isolate:
        return measure_request(request_path)
    child = subprocess.Popen(
        [sys.executable, "-m", "libreyolo.sweep.point", str(request_path)],
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | lease.child_env(),
    )
    _, stderr = child.communicate()
    if stderr:
        sys.stderr.write(stderr)
    status_path = request_path.parent / STATUS_FILE
    if status_path.is_file():
        return dict(json.loads(status_path.read_text(encoding="utf-8")))
    lines = [line for line in stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else "no output"
    record = _status(
        request,
        "failed",
        reason=f"child process exited {child.returncode}: {last}",
        code="crashed",
    )
    record["pid"] = child.pid
    return record


if __name__ == "__main__":
    measure_request(Path(sys.argv[1]))
