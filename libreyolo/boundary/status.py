"""The one map from what an entry point raised to its exit status, and the one exit.

Every entry point runs its body through `exit_status` and ends with `exit_process`: the
`libreyolo` console script and `python -m libreyolo`, `libreyolo-sweep` (and `python -m
libreyolo.sweep`), `python -m libreyolo.sweep.point`, `python -m libreyolo.sweep.report` and a
sweep point's child process. Hydra's `@hydra.main` ends with `sys.exit` on some paths of its
own (its `--help`, an override it cannot parse: 0, 1 or 2); that `SystemExit` is caught here
like argparse's `--help`, so its status too is set by `exit_process` and nowhere else.

Must not: print anything but through the `Output` it is handed, or know a command: a body
returns its own status (a sweep with a failed point, a gate that failed) and raises the rest.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable
from typing import NoReturn

from libreyolo.boundary.output import Output
from libreyolo.errors import ExitStatus, ProfileError, Terminated


def exit_status(
    body: Callable[[], int],
    out: Output,
    *,
    debug: bool = False,
    crash_traceback: bool = False,
) -> ExitStatus:
    """Run `body` and return its status, or the status of what it raised, with one line on
    `out` for an error: a `ProfileError` its own status, Ctrl-C 130, SIGTERM 143, a library's
    `SystemExit` its code. Any other exception is a crash (exit 1): one line naming it, or with
    `crash_traceback` its traceback (entry points that have no `--debug` flag). `debug`
    re-raises errors and crashes instead, so the interpreter prints the traceback."""
    try:
        return _known(body(), out)
    except SystemExit as stop:  # argparse's --help, Hydra's own exits: their text is out
        return _known(stop.code, out)
    except ProfileError as err:
        if debug:
            raise
        out.error(err)
        return err.status
    except KeyboardInterrupt:
        out.error_line("interrupted", "interrupted")
        return ExitStatus.INTERRUPTED
    except Terminated:
        out.error_line("terminated", "terminated")
        return ExitStatus.TERMINATED
    except Exception as err:
        if debug:
            raise
        if crash_traceback:
            out.traceback(err)
        else:
            out.error_line(
                "internal_error",
                f"internal error: {type(err).__name__}: {err} "
                "(run again with --debug for the traceback)",
            )
        return ExitStatus.FAILED


def _known(code: object, out: Output) -> ExitStatus:
    """`code` (a body's return, a `SystemExit`'s code) as an `ExitStatus`: None is 0, a number
    outside the table is 1, and a text (`sys.exit("why")`) is written as one line, then 1."""
    if code is None:
        return ExitStatus.OK
    if isinstance(code, int):
        try:
            return ExitStatus(code)
        except ValueError:
            return ExitStatus.FAILED
    out.error_line("failed", str(code))
    return ExitStatus.FAILED


def exit_process(status: int, out: Output, *, finalize: bool = True) -> NoReturn:
    """End the process with `status`, `out` flushed first: the only exit in the package.

    `finalize=False` skips the interpreter's finalization once the work is done: with torch
    loaded, tearing down its modules and libraries takes about 0.45 s on a 2-core host (a
    tenth of the main job), for memory the exit returns anyway. The atexit hooks still run
    (logging's flush, multiprocessing's children, temporary folders), and so does the normal
    exit whenever another non-daemon thread is alive: Python would join it first."""
    out.flush()
    if not finalize and _only_thread_left():
        atexit._run_exitfuncs()
        Output.flush_process_streams()
        os._exit(int(status))
    raise SystemExit(int(status))


def _only_thread_left() -> bool:
    import threading  # only the measuring commands ask: a reader's start-up skips it

    current = threading.current_thread()
    others = [t for t in threading.enumerate() if t is not current and not t.daemon]
    return current is threading.main_thread() and not others
