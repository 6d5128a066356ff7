"""`--repeat N`: each trial measured in a fresh process of its own, or all in this one.

Role: a trial in a process that already ran one inherits its profiler, allocator and kernel
state; PyTorch's profiler has dropped GPU kernel events at the start of every session after the
first (pytorch#192021) and later sessions can drift (pytorch#175790). So by default every trial
of two or more runs in a child from the fork server (`fresh.py`), writing into the caller's
staged set (`BorrowedRun`); its progress, warnings and profile come back through a pipe, and an
expected error comes back as itself (same line, same exit). A child that dies, or raises what
is not an expected error, fails the run (`TrialCrashedError`, exit 3). `window.repeat_in_process`
(`--repeat-in-process`) keeps every trial in this process. Ctrl-C and SIGTERM stop the child
(SIGTERM, then SIGKILL) and unwind here as before; a child whose parent is killed outright ends.

Must not: print (warnings go to the caller's `notice` through `warnings`), or commit the set.
"""

from __future__ import annotations

import contextlib
import multiprocessing.connection
import os
import pickle
import signal
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import msgspec.structs

from libreyolo.config.schema import ProfileConfig
from libreyolo.document.model import Profile
from libreyolo.errors import ProfileError, Terminated, TrialCrashedError
from libreyolo.measure.fresh import end_with_parent, fresh_context, start_method, stop_child
from libreyolo.pids import exit_text

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from libreyolo.measure.artifacts import StagedRun

Progress = Callable[[str, int, int], None]
CRASH_HINT = "run it again with --repeat-in-process --debug to see the traceback"


def measure_trials(
    cfg: ProfileConfig,
    run: StagedRun,
    on_progress: Progress | None,
    notes: Sequence[str],
    num_trials: int,
) -> list[Profile]:
    """`num_trials` trials of `cfg` measured into `run`, each recording the process that
    measured it (`run.pid`) and whether the trials had a process each (`run.isolated_trials`:
    None for a single trial, which is the first of its process either way)."""
    from libreyolo.measure.from_config import collect_trial

    if num_trials == 1:
        return [collect_trial(cfg, run, on_progress, notes)]
    # libreyolo 1.x's trainer measures in a probe process of its own for each trial already.
    in_probe = cfg.trainer is not None
    fresh = not in_probe and not cfg.window.repeat_in_process
    isolated = in_probe or fresh
    trials = []
    for number in range(1, num_trials + 1):
        if fresh:
            profile = _in_fresh_process(cfg, run, on_progress, notes, number, num_trials)
        else:
            profile = collect_trial(cfg, run, on_progress, notes)
        info = msgspec.structs.replace(profile.run, isolated_trials=isolated)
        trials.append(msgspec.structs.replace(profile, run=info))
    return trials


def _in_fresh_process(
    cfg: ProfileConfig,
    run: StagedRun,
    on_progress: Progress | None,
    notes: Sequence[str],
    number: int,
    total: int,
) -> Profile:
    context = fresh_context()
    reader, writer = context.Pipe(duplex=False)
    args = (writer, cfg, str(run.staging), str(run.target), list(notes), dict(os.environ))
    child = context.Process(target=_trial_main, args=args, name=f"libreyolo-trial-{number}")
    try:
        with start_method(context.get_start_method()):
            child.start()
        writer.close()  # the child's copy is the only one left: its end is our EOF
        last = _relay(reader, child.sentinel, on_progress)
        child.join()
    except BaseException:  # Ctrl-C, SIGTERM: the trial stops with us
        stop_child(child)
        raise
    finally:
        writer.close()
        reader.close()
    return _outcome(last, child.exitcode, number, total)


def _relay(
    reader: Connection, sentinel: int, on_progress: Progress | None
) -> tuple[str, Any] | None:
    """Pass the child's progress and warnings on until its last message (the profile, an
    error, a stop or a crash) or its end; that message, or None when it sent none."""
    while True:
        ready = multiprocessing.connection.wait([reader, sentinel])
        # it ended: anything it sent before is readable still
        if reader not in ready and not reader.poll():
            return None
        try:
            kind, payload = reader.recv()
        except EOFError:
            return None
        if not relayed(kind, payload, on_progress):
            return kind, payload


def relayed(kind: str, payload: Any, on_progress: Progress | None) -> bool:
    """Pass on a child's progress or warning (True); False for its last message."""
    from libreyolo.measure.from_config import Note

    if kind == "progress":
        if on_progress is not None:
            on_progress(*payload)
        return True
    if kind == "warning":
        is_note, text = payload
        warnings.warn(text, Note if is_note else UserWarning, stacklevel=3)
        return True
    return False


def ended(kind: str, payload: Any) -> BaseException | str:
    """A child's last message other than its profile: a stop is raised here (Ctrl-C or
    SIGTERM reached it); an expected error comes back as itself; a crash as the last line of
    its traceback."""
    if kind == "stopped":
        if payload == signal.SIGTERM:
            raise Terminated
        raise KeyboardInterrupt
    if kind == "error":
        error = pickle.loads(payload)
        assert isinstance(error, BaseException)
        return error
    lines = [line for line in str(payload).splitlines() if line.strip()]
    return lines[-1] if lines else "no traceback"


def _outcome(
    last: tuple[str, Any] | None, exitcode: int | None, number: int, total: int
) -> Profile:
    which = f"trial {number} of {total}"
    if last is None:
        why = f"{which}: its process exited {exit_text(exitcode)} before it finished"
        hint = CRASH_HINT
        if exitcode == -signal.SIGKILL:
            hint = "if the kernel's OOM killer ended it (dmesg says), lower --batch or --imgsz"
        raise TrialCrashedError(why, hint=hint)
    kind, payload = last
    if kind == "profile":
        assert isinstance(payload, Profile)
        return payload
    error = ended(kind, payload)
    if isinstance(error, BaseException):
        raise error
    raise TrialCrashedError(f"{which} crashed in its process: {error}", hint=CRASH_HINT)


def _stop(signum: int, frame: object) -> NoReturn:
    raise Terminated


def _trial_main(
    writer: Connection,
    cfg: ProfileConfig,
    staging: str,
    target: str,
    notes: list[str],
    env: dict[str, str],
) -> None:
    """A trial's own process: the parent's environment (before CUDA starts), one measurement
    into the parent's staged set, and one last message saying how it went."""
    from libreyolo.measure.artifacts import BorrowedRun
    from libreyolo.measure.from_config import collect_trial

    start_child(env)
    report_to_parent(
        writer, lambda progress: collect_trial(cfg, BorrowedRun(staging, target), progress, notes)
    )


def start_child(env: dict[str, str]) -> None:
    """A fresh child's first step: its parent's environment, SIGTERM as `Terminated`, and an
    end when the parent is gone."""
    os.environ.clear()
    os.environ.update(env)
    signal.signal(signal.SIGTERM, _stop)
    end_with_parent()


def report_to_parent(writer: Connection, measure: Callable[[Progress], Profile]) -> None:
    """In a fresh child: `measure(progress)`, its progress and warnings sent to the parent as
    they come, then one last message: the profile, the expected error (pickled), a stop, or a
    crash with its traceback."""
    from libreyolo.measure.failures import resource_failures

    def send(kind: str, payload: Any) -> None:
        with contextlib.suppress(OSError):  # the parent is gone: nobody to tell
            writer.send((kind, payload))

    def progress(stage: str, done: int, total: int) -> None:
        send("progress", (stage, done, total))

    try:
        with warnings_sent(send), resource_failures():
            profile = measure(progress)
        send("profile", profile)
    except KeyboardInterrupt:
        send("stopped", signal.SIGINT)
    except Terminated:
        send("stopped", signal.SIGTERM)
    except ProfileError as err:
        send(*error_message(err))
    except Exception:
        send("crash", traceback.format_exc())


def error_message(err: ProfileError) -> tuple[str, Any]:
    """("error", the pickled error) when it comes back whole, else a crash with its line."""
    try:
        data = pickle.dumps(err)
        pickle.loads(data)
    except Exception:
        return "crash", f"{type(err).__name__}: {err}"
    return "error", data


@contextmanager
def warnings_sent(send: Callable[[str, Any], None]) -> Iterator[None]:
    """The child's Python warnings sent to the parent, which shows them as its own would be."""
    from libreyolo.measure.from_config import Note

    def show(message: Warning | str, category: type[Warning], *args: object, **kw: object) -> None:
        send("warning", (issubclass(category, Note), str(message)))

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        yield
