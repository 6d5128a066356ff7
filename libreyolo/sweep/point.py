"""One sweep point: measure a resolved config into its own folder and record how it went.

Role: `run_point` writes `point.json` (resolved config + overrides), takes the device lease
(`lease.py`: a free GPU, or the CPU), measures in a fresh child process (forked from a server that
has imported torch but never used it: a point in the launcher's own process would inherit the
previous point's CUDA context, allocator cache and peak counters; its stderr also lands in
`point.log`, and one that died before it could open it leaves a `point.log` saying so; it starts
under the fork server's own start method, whatever a launcher's worker set: joblib's loky workers
set `loky`) or in this process (`sweep.isolate=false`) and leaves `status.json`: {status:
ok|failed|interrupted, reason, code, overrides, profile (the repeat aggregate when window.repeat >
1; kept too for a point failed by `tune.memory_budget_mb`, whose measurement is real),
profile_sha256 (its bytes' digest as committed, for resume), pid (the
measuring process), held_device, lease_acquired_at, lease_released_at (epoch s), lease_wait_s,
measure_s (inside measure_config), window_s (the measurement windows themselves: warmup and
measured iterations), point_s (the whole point), reused (only when true)}. Every file lands
atomically. In `infer` mode the sweep's `amp` key means `--half`. With `tune.memory_budget_mb` the
point is held to that budget (budget.py: the CUDA allocator capped there; a peak above it fails the
point, code `over_budget`).

Resume (`sweep.resume`, default on): a point whose folder already holds our `point.json` with the
same config and overrides (`sweep.resume` itself aside) and an ok status whose profile reads back
as the bytes its digest recorded is not measured again (`resume.py`); its `status.json` keeps
its record and gains `reused: true`. One that looked done but fails a check is measured again
after a `note:` line saying why.
Stop: a `KeyboardInterrupt` (Ctrl-C, or the sweep's SIGTERM handler) while a point waits or
measures stops the child (`fresh.stop_child`: SIGTERM, then SIGKILL), records the point as
`interrupted` and propagates, so no further point starts.

Must not: raise for an expected failure (a `ProfileError` such as a bad value or a dataset too
small, or out of memory): it is recorded as `failed` with its reason and the sweep goes on.
Must not hand a `DictConfig` to the child (the request is plain JSON), nor replace files in a
point folder that this tool did not write (that point fails, nothing is written), nor print or
exit but through `libreyolo.boundary` (the child and `python -m libreyolo.sweep.point
POINT_JSON`, which measures a point again from its request, are entry points of their own).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import signal
import sys
import time
from pathlib import Path

from libreyolo.boundary.output import Output
from libreyolo.boundary.status import exit_process, exit_status
from libreyolo.config.compose import config_from_dict
from libreyolo.config.schema import (
    DeviceConfig,
    SweepConfig,
    requested_ranks,
)
from libreyolo.document.codec import document_bytes
from libreyolo.document.convert import convert
from libreyolo.document.files import write_atomic
from libreyolo.document.json_value import JsonObject
from libreyolo.document.mode import Mode
from libreyolo.document.sweep_files import (
    LOG_FILE,
    REQUEST_FILE,
    STATUS_FILE,
    read_status,
)
from libreyolo.document.sweep_model import PointRequest, PointStatus, Status
from libreyolo.errors import (
    ExitStatus,
    OutOfMemoryError,
    ProfileError,
    UsageError,
    WontFitError,
)
from libreyolo.measure.device_cap import capped_device_memory, checked_budget
from libreyolo.measure.failures import is_out_of_memory
from libreyolo.measure.fresh import (
    CHILD_PRELOAD,
    end_with_parent,
    fresh_context,
    start_method,
    stop_child,
)
from libreyolo.pids import exit_text
from libreyolo.sweep.budget import budget_failure
from libreyolo.sweep.child_log import last_error, relayed
from libreyolo.sweep.lease import Lease, device_lease
from libreyolo.sweep.owned import HINT, foreign_point_file
from libreyolo.sweep.resume import profile_sha256, reusable
from libreyolo.sweep.stop import raise_stopped, signal_of
from libreyolo.workload.registry import preload_builtins

CHILD_POLL_S = 0.5  # how often the point wakes while its child measures (to be stopped)
# The warnings this process has relayed from its points' logs: each is shown once a sweep (the
# random-weights paragraph would repeat at every point); every point.log keeps its own.
_WARNED: set[str] = set()


def forget_warnings() -> None:
    """A new sweep starts: relay each warning again, once."""
    _WARNED.clear()


def _write(path: Path, document: PointRequest | PointStatus) -> None:
    write_atomic(path, document_bytes(document))


def _status(
    request: PointRequest,
    status: Status,
    *,
    reason: str = "",
    code: str = "",
    profile: str = "",
    digest: str | None = None,
) -> PointStatus:
    """A point's status record (`digest`: its profile's, `resume.profile_sha256`); the
    measuring process fills in its pid and times (`pid`, `measure_s`, `window_s`), `run_point`
    the lease's and the whole point's."""
    return PointStatus(
        status=status,
        reason=reason,
        code=code,
        overrides=list(request.overrides),
        profile=profile or None,
        profile_sha256=digest,
    )


def _reason(err: ProfileError) -> str:
    """A failed point's reason: the error's line with its way out, as the CLI prints it."""
    return f"{err.message} ({err.hint})" if err.hint else err.message


def _is_oom(err: BaseException | None) -> bool:
    """Out of memory, however it surfaced: the measurement's own error, or its cause (the
    sweep records both as code `oom`)."""
    if isinstance(err, OutOfMemoryError | WontFitError):  # WontFit: refused before measuring
        return True
    return err is not None and is_out_of_memory(err)


def measure_request(request_path: Path) -> PointStatus:
    """Measure the point described by `request_path`; write and return its status record."""
    for module in CHILD_PRELOAD:  # torch and the collectors: imported before the clock starts
        importlib.import_module(module)
    preload_builtins()

    point_dir = request_path.parent
    # The sweep wrote it just before: one damaged since fails here, and the point is recorded
    # as crashed with this error.
    request = convert(json.loads(request_path.read_text(encoding="utf-8")), PointRequest)
    clock = WindowClock()
    try:
        record = _measure(request, point_dir, clock)
    except ProfileError as err:
        code = "oom" if _is_oom(err) or _is_oom(err.__cause__) else err.code
        record = _status(request, "failed", reason=_reason(err), code=code)
    except (RuntimeError, MemoryError) as err:
        if not _is_oom(err):
            raise
        record = _status(request, "failed", reason=f"out of memory: {err}", code="oom")
    started = clock.started
    record = dataclasses.replace(
        record,
        pid=os.getpid(),
        held_device=request.held_device,
        measure_s=None if started is None else time.perf_counter() - started,
        window_s=clock.window_s if started is not None else None,
    )
    _write(point_dir / STATUS_FILE, record)
    return record


class WindowClock:
    """Progress events in, the time spent inside measurement windows out: from each `measure`
    stage start to the last iteration it reported (setup, analysis and saving stay outside)."""

    def __init__(self) -> None:
        self.started: float | None = None
        self._closed_s = 0.0
        self._window: tuple[float, float] | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if stage == "measure" and done == 0:
            self._close()
            self._window = (now, now)
        elif self._window is not None and stage in ("warmup", "measured step"):
            self._window = (self._window[0], now)

    def _close(self) -> None:
        if self._window is not None:
            self._closed_s += self._window[1] - self._window[0]
            self._window = None

    @property
    def window_s(self) -> float:
        self._close()
        return self._closed_s


def _measure(request: PointRequest, point_dir: Path, clock: WindowClock) -> PointStatus:
    from libreyolo.measure.from_config import measure_config

    cfg = config_from_dict(request.config)
    cfg = dataclasses.replace(cfg, project=str(point_dir))
    if request.device:  # the leased GPU as this process numbers it; the ranks stay asked for
        device = DeviceConfig(name=request.device, nproc=cfg.device.nproc)
        cfg = dataclasses.replace(cfg, device=device)
    if cfg.mode.measures == Mode.INFER:
        cfg = dataclasses.replace(cfg, half=cfg.amp)  # a sweep's `amp` means --half for infer
    budget_mb = checked_budget(cfg.tune.memory_budget_mb)
    clock.started = time.perf_counter()
    # several ranks: each caps its own GPU (measure/world.py's rank), not this process
    capped = None if requested_ranks(dataclasses.asdict(cfg.device)) > 1 else budget_mb
    with capped_device_memory(capped, cfg.device.name):
        profile, path = measure_config(
            cfg,
            list(request.overrides),
            clock,
            held_device=request.held_device,
            notice=Output.plain().notice,  # this process's stderr: point.log in a point's child
        )
    recorded = str(path.relative_to(point_dir))
    digest = profile_sha256(path)  # as committed: resume reuses only these bytes
    failure = None if budget_mb is None else budget_failure(profile, budget_mb)
    if failure is not None:  # measured, but does not fit: the profile stays the record
        code, reason = failure
        return _status(request, "failed", reason=reason, code=code, profile=recorded, digest=digest)
    return _status(request, "ok", profile=recorded, digest=digest)


def _device_name(cfg_dict: JsonObject) -> str:
    """The config's `device.name` ("0" when it names none)."""
    device = cfg_dict.get("device")
    name = device.get("name", DeviceConfig.name) if isinstance(device, dict) else DeviceConfig.name
    return str(name)


def _sweep_settings(cfg_dict: JsonObject) -> SweepConfig:
    """The config's `sweep` group, typed (its defaults where the config has none)."""
    sweep = cfg_dict.get("sweep")
    return config_from_dict({"sweep": sweep} if isinstance(sweep, dict) else {}).sweep


def run_point(
    cfg_dict: JsonObject,
    point_dir: str | Path,
    *,
    isolate: bool | None = None,
    overrides: list[str] | None = None,
    reuse_bounds: bool = False,
) -> PointStatus:
    """Measure one point into `point_dir` under its device lease and return its status record
    (never raises for an expected failure; a `KeyboardInterrupt` is recorded and re-raised).
    `isolate` (default: the config's `sweep.isolate`) runs the measurement in a fresh child
    process; `sweep.resume` keeps a point already measured with the same settings, and with
    `reuse_bounds` (a tune search) one that did not fit under them too."""
    started = time.perf_counter()
    point_dir = Path(point_dir).resolve()
    point_dir.mkdir(parents=True, exist_ok=True)
    sweep = _sweep_settings(cfg_dict)
    isolate = sweep.isolate if isolate is None else isolate
    request = PointRequest(config=cfg_dict, overrides=list(overrides or []))
    foreign = foreign_point_file(point_dir)
    if foreign is not None:  # not ours to replace: record nothing there
        reason = f"refusing to replace {foreign}: libreyolo-sweep did not write it ({HINT})"
        return _status(request, "failed", reason=reason, code="usage")
    status_path = point_dir / STATUS_FILE
    recorded = reusable(point_dir, request, bounds=reuse_bounds) if sweep.resume else None
    if recorded is not None and recorded.kept is not None:
        kept = dataclasses.replace(recorded.kept, reused=True)
        _write(status_path, kept)
        return kept
    if recorded is not None and recorded.doubt:
        Output.plain().notice("note", f"{point_dir.name} measured again: {recorded.doubt}")
    request_path = point_dir / REQUEST_FILE
    _write(request_path, request)
    status_path.unlink(missing_ok=True)
    device = _device_name(cfg_dict)
    waiting = time.monotonic()
    try:
        with device_lease(
            device, lock_dir=sweep.lock_dir, timeout_s=sweep.lease_timeout_s, gpus=sweep.gpus
        ) as lease:
            record = _measure_leased(request, request_path, lease, device, isolate)
        record = dataclasses.replace(
            record,
            held_device=lease.held_device,
            lease_acquired_at=lease.acquired_at,
            lease_released_at=time.time(),
            lease_wait_s=lease.wait_s,
        )
    except ProfileError as err:  # only the lease raises: measuring records its failures
        record = _status(request, "failed", reason=_reason(err), code=err.code)
        record = dataclasses.replace(record, lease_wait_s=time.monotonic() - waiting)
    except KeyboardInterrupt as stop:
        if read_status(status_path) is None:  # the child may have finished as the signal came
            reason = f"stopped by {signal_of(stop).name}"
            finished = _status(request, "interrupted", reason=reason, code="interrupted")
            finished = dataclasses.replace(finished, point_s=time.perf_counter() - started)
            _write(status_path, finished)
        raise
    record = dataclasses.replace(record, point_s=time.perf_counter() - started)
    _write(status_path, record)
    return record


def _measure_leased(
    request: PointRequest, request_path: Path, lease: Lease, device: str, isolate: bool
) -> PointStatus:
    child_device = lease.child_device(device) if isolate else lease.in_process_device(device)
    request = dataclasses.replace(request, held_device=lease.held_device, device=child_device)
    _write(request_path, request)
    if not isolate:
        return measure_request(request_path)
    log_path = request_path.parent / LOG_FILE
    context = fresh_context()
    child = context.Process(
        target=_child_main,
        args=(str(request_path), str(log_path), lease.child_env()),
        name=f"libreyolo-point-{request_path.parent.name}",
    )
    log_path.unlink(missing_ok=True)  # the child makes it first: none after it = never started
    try:
        with start_method(context.get_start_method()):
            child.start()
        while child.exitcode is None:  # in steps: Ray's cancel interrupts only between them
            child.join(CHILD_POLL_S)
    except BaseException:  # the sweep is stopping: so is this point
        stop_child(child)
        raise
    started = log_path.is_file()
    log = log_path.read_text(encoding="utf-8", errors="replace") if started else ""
    Output.plain().relay(relayed(log, _WARNED))
    written = read_status(request_path.parent / STATUS_FILE)
    if written is not None:
        return written
    reason = crash_reason(child.exitcode, log if started else None)
    if not started:  # the folder says what happened too
        write_atomic(log_path, (reason + "\n").encode("utf-8"))
    record = _status(request, "failed", reason=reason, code="crashed")
    return dataclasses.replace(record, pid=child.pid)


def crash_reason(exitcode: int | None, log: str | None) -> str:
    """Why a point's child left no status: its log's last error, or (`log` None: it never
    opened `point.log`) that it died while Python's multiprocessing started it, whose traceback
    went to the sweep's stderr (the fork server's)."""
    if log is None:
        return (
            f"child process exited {exit_text(exitcode)} before it started measuring "
            "(multiprocessing could not start it; its error is on the sweep's stderr)"
        )
    return f"child process exited {exit_text(exitcode)}: {last_error(log)}"


def _child_main(request_path: str, log_path: str, env: dict[str, str]) -> None:
    """A point's child process: its lease's environment (before CUDA starts), stderr into the
    point's log, then the measurement. SIGTERM (the sweep stopping it) unwinds like Ctrl-C, so
    the measurement cleans up; either ends the child quietly with 128 + the signal: the sweep
    records the point. A sweep killed outright (SIGKILL) stops it too (`end_with_parent`)."""
    os.environ.update(env)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 2)
    os.close(fd)
    signal.signal(signal.SIGTERM, raise_stopped)
    end_with_parent()
    out = Output.plain()  # after the dup2: its stderr is the point's log
    exit_process(
        exit_status(lambda: _measure_quietly(request_path), out, crash_traceback=True), out
    )


def _measure_quietly(request_path: str) -> ExitStatus:
    """Measure; a stop ends the child with 128 + the signal and no line: the sweep that
    stopped it records the point, and its log stays free of a traceback."""
    try:
        measure_request(Path(request_path))
    except KeyboardInterrupt as stop:
        return ExitStatus(128 + signal_of(stop))
    return ExitStatus.OK


def main(argv: list[str] | None = None) -> None:
    """`python -m libreyolo.sweep.point POINT_JSON`: measure a point again from its request
    (its `status.json` says how it went; the exit is 0 unless it crashed or was refused)."""
    words = sys.argv[1:] if argv is None else argv
    out = Output.plain()
    exit_process(exit_status(lambda: _again(words), out, crash_traceback=True), out)


def _again(words: list[str]) -> ExitStatus:
    if len(words) != 1:
        raise UsageError(
            "python -m libreyolo.sweep.point takes one point.json",
            hint="python -m libreyolo.sweep.point <point dir>/point.json",
        )
    measure_request(Path(words[0]))
    return ExitStatus.OK


if __name__ == "__main__":
    main()
