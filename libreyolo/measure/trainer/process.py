"""The trainer probe's process: started with the training environment's interpreter, spoken
to through a pipe, never left behind.

Role: start `libreyolo/probe/trainer_probe.py` under `TrainerCommand.python` in a session of
its own (its DataLoader workers with it), hand it its request, read its events (protocol in
the probe's docstring) and call the `ProbeEvents` handler for each: `ready` returns the window
plan sent back. Everything the probe's libreyolo prints goes to a log file whose last lines
become the error when it fails. A trainer silent for longer than `timeout_s`, a crash, Ctrl-C
or SIGTERM here: the whole process group is stopped (SIGTERM, then SIGKILL) before this
returns or raises, so no training outlives the call. Must not: decide the plan or assemble
the profile (collect.py does).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from libreyolo.errors import TrainerError, TrainerFailedError
from libreyolo.measure.trainer.protocol import ProbeHello, ProbeReady, ProbeResult, checked
from libreyolo.measure.trainer.settings import TrainerCommand

PROBE = Path(__file__).resolve().parents[2] / "probe" / "trainer_probe.py"
PROTOCOL = 1
RESULT_NAME = "probe.json"
LOG_NAME = "trainer.log"
MAX_EVENT_BYTES = 1 << 20  # an event is a few hundred bytes; more is not the probe talking
MAX_RESULT_BYTES = 64 << 20
STOP_GRACE_S = 5.0  # SIGTERM to SIGKILL
EXIT_GRACE_S = 30.0  # after `done`: 1.x's own wrap-up (callbacks, result files) before it is cut
LOG_TAIL_BYTES = 16 * 1024
MAX_LINE_CHARS = 300
GO = {"go": True}
USAGE_EXIT_CODES = (2, 3, 4)  # 1.x's CLI: bad settings, data or model (its errors.EXIT_CODES)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]")
_ERROR_LINE = re.compile(r"\b(Error|ERROR|Exception)\b")


class ProbeEvents(Protocol):
    """What the caller does as the probe reports."""

    def started(self, pid: int) -> None:
        """The probe's process exists (its pid leads the process group)."""

    def hello(self, info: ProbeHello) -> None:
        """Versions, as soon as the environment's torch and libreyolo imported."""

    def ready(self, info: ProbeReady) -> dict[str, Any]:
        """What 1.x built; returns the plan the probe runs."""
        ...

    def iteration(self, index: int) -> None:
        """Iteration `index` of the plan ended."""


@dataclass
class ProbeRun:
    """What a finished probe left: its events' facts and its result document."""

    hello: ProbeHello = field(default_factory=ProbeHello)
    ready: ProbeReady | None = None
    result: ProbeResult | None = None


def run_probe(
    command: TrainerCommand,
    scratch: Path,
    trace_path: Path,
    events: ProbeEvents,
    *,
    timeout_s: float,
) -> ProbeRun:
    """Run the probe for `command`: its trace lands at `trace_path`; its `probe.json`, 1.x's
    own run folder and the log in `scratch`. Raises TrainerError (the environment or 1.x refused
    the settings, exit 2) or TrainerFailedError (it ended, hung or crashed, exit 3)."""
    read_fd, write_fd = os.pipe()
    log_path = scratch / LOG_NAME
    try:
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [command.python, str(PROBE)],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(write_fd,),
                env=_environment(command),
                start_new_session=True,  # its own group: stopped whole, never by our Ctrl-C
            )
    except OSError as err:
        os.close(read_fd)
        os.close(write_fd)
        raise TrainerError(f"--trainer {command.python}: cannot start it ({err.strerror})") from err
    os.close(write_fd)
    try:
        events.started(process.pid)
        request = {
            "protocol": PROTOCOL,
            "fd": write_fd,
            "argv": [*command.words, f"project={scratch}", "name=run", "exist_ok=True"],
            "out_dir": str(scratch),
            "trace_path": str(trace_path),
        }
        _send(process, request)
        run = _converse(process, read_fd, events, command, log_path, timeout_s)
        run.result = read_result(scratch / RESULT_NAME)
        _wait_for_exit(process)
        return run
    finally:
        os.close(read_fd)
        stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    """The probe's whole process group stopped: SIGTERM, then SIGKILL after a grace."""
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    for sig, grace in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)  # its workers too, also once the leader has exited
        if process.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(grace)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(STOP_GRACE_S)


def _environment(command: TrainerCommand) -> dict[str, str]:
    env = dict(os.environ)
    env.update(command.environment())
    env["PYTHONUNBUFFERED"] = "1"  # the log's last lines are the error when it fails
    env.setdefault("KINETO_LOG_LEVEL", "3")
    return env


def _send(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    if process.stdin is None:
        raise RuntimeError("the probe has no stdin")
    try:
        process.stdin.write((json.dumps(message) + "\n").encode("utf-8"))
        process.stdin.flush()
    except OSError:  # it died: its exit says why (the event loop sees the pipe close)
        pass


def _converse(
    process: subprocess.Popen[bytes],
    fd: int,
    events: ProbeEvents,
    command: TrainerCommand,
    log_path: Path,
    timeout_s: float,
) -> ProbeRun:
    run = ProbeRun()
    for event in _events(fd, timeout_s, command):
        kind = event.get("event")
        if kind == "hello":
            _check_version(event, command)
            run.hello = checked(ProbeHello, event, "hello event")
            events.hello(run.hello)
        elif kind == "ready":
            run.ready = checked(ProbeReady, event, "ready event")
            _send(process, events.ready(run.ready))
        elif kind == "iteration" and isinstance(event.get("i"), int):
            events.iteration(event["i"])
            _send(process, GO)  # the host is sampled: the probe may start the next one
        elif kind == "done":
            return run
        elif kind == "refused":
            raise _refused(event, command)
        elif kind == "failed":
            raise _failed(event, command, log_path)
        else:
            raise TrainerFailedError(f"the trainer probe sent an unknown event: {str(kind)[:80]}")
    code = _wait_for_exit(process)
    raise TrainerFailedError(
        f"libreyolo train exited (status {code}) before its window was measured: "
        f"{_last_error(log_path)}",
        hint=f"run it by hand to see why: {command.command_line()}",
    )


def _events(fd: int, timeout_s: float, command: TrainerCommand) -> Iterator[dict[str, Any]]:
    """The probe's events as they come; stops at end of file; TrainerFailedError after
    `timeout_s` without one."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    buffer = b""
    while True:
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if not isinstance(event, dict):
                raise TrainerFailedError("the trainer probe sent a line that is not an event")
            yield event
        if len(buffer) > MAX_EVENT_BYTES:
            raise TrainerFailedError("the trainer probe sent an event over 1 MiB")
        deadline = time.monotonic() + timeout_s
        ready: list[tuple[int, int]] = []
        while not ready:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TrainerFailedError(
                    f"libreyolo train was silent for {timeout_s:g} s (its setup or one step "
                    "took longer): stopped",
                    hint="raise --trainer-timeout, or run it by hand to see where it hangs: "
                    + command.command_line(),
                )
            ready = poller.poll(min(left, 1.0) * 1000)
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return
        buffer += chunk


def _check_version(hello: dict[str, Any], command: TrainerCommand) -> None:
    version = str(hello.get("libreyolo", "?"))
    if not version.startswith("1."):
        where = _one_line(str(hello.get("libreyolo_path", "?")))
        raise TrainerError(
            f"--trainer {command.python}: its libreyolo is {_one_line(version)} (at {where}), "
            "not libreyolo 1.x",
            hint="point --trainer at the environment where you run libreyolo 1.x's train",
        )


def _refused(event: dict[str, Any], command: TrainerCommand) -> Exception:
    missing = [_one_line(str(name)) for name in event.get("missing", [])][:10]
    version = _one_line(str(event.get("libreyolo", "?")))
    if not missing:
        return TrainerFailedError(f"the trainer probe refused: {_one_line(str(event))}")
    return TrainerFailedError(
        f"libreyolo {version} at {command.python} lacks the hook points its trainer is timed "
        f"through: {', '.join(missing)}",
        hint="libreyolo 1.6 and later have them; upgrade that environment's libreyolo",
    )


def _failed(event: dict[str, Any], command: TrainerCommand, log_path: Path) -> Exception:
    stage, exit_code = event.get("stage"), event.get("exit_code")
    reason = _one_line(str(event.get("error", "")))
    if stage == "import":
        return TrainerError(
            f"--trainer {command.python}: cannot import torch and libreyolo there ({reason})",
            hint="point --trainer at the environment where libreyolo 1.x is installed",
        )
    last = _last_error(log_path)
    if exit_code in USAGE_EXIT_CODES:
        return TrainerError(
            f"libreyolo train refused the settings: {last}",
            hint=f"its command was: {command.command_line()}",
        )
    said = reason if last in reason or reason in last else f"{reason}; its log ends: {last}"
    return TrainerFailedError(
        f"libreyolo train failed: {said}",
        hint=f"run it by hand to see why: {command.command_line()}",
    )


def _last_error(log_path: Path) -> str:
    """The log's last error line (1.x's `Error [code]: ...`), else its last line."""
    try:
        with log_path.open("rb") as log:
            log.seek(max(0, log_path.stat().st_size - LOG_TAIL_BYTES))
            text = log.read().decode("utf-8", "replace")
    except OSError:
        return "no log"
    lines = [_one_line(line) for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if _ERROR_LINE.search(line)]
    return (errors or lines or ["it printed nothing"])[-1]


def _one_line(text: str) -> str:
    return _ANSI.sub(" ", text).strip()[:MAX_LINE_CHARS]


def read_result(path: Path) -> ProbeResult:
    """The probe's `probe.json`, checked (TrainerFailedError for anything else)."""
    try:
        if path.stat().st_size > MAX_RESULT_BYTES:
            raise TrainerFailedError(f"the trainer probe's {RESULT_NAME} is over 64 MiB")
        result = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as err:
        raise TrainerFailedError(f"the trainer probe left no readable {RESULT_NAME}") from err
    if not isinstance(result, dict) or result.get("protocol") != PROTOCOL:
        raise TrainerFailedError(f"the trainer probe's {RESULT_NAME} is not protocol {PROTOCOL}")
    return checked(ProbeResult, result, RESULT_NAME)


def _wait_for_exit(process: subprocess.Popen[bytes]) -> int | None:
    """The probe's exit status once 1.x wrapped up (or None when it had to be cut short)."""
    try:
        return process.wait(EXIT_GRACE_S)
    except subprocess.TimeoutExpired:
        return None
