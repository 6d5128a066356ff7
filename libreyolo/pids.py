"""Whether a process id is still alive: how a folder left by a killed run is told from one a
running process is filling (measure's staging sets, the synthetic set's staging folders), and
how a child's exit code reads. Stdlib only, no I/O beside the signal-0 probe."""

from __future__ import annotations

import os
import signal


def pid_alive(pid: int) -> bool:
    """True unless `pid` is surely gone; never guesses "gone" (another user's process, or
    Windows, where signal 0 would terminate it, counts as alive)."""
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OverflowError, ValueError):
        return False
    except OSError:  # EPERM: alive, someone else's
        return True
    return True


def exit_text(code: int | None) -> str:
    """`1`, or `-9 (signal SIGKILL)` for a child a signal ended."""
    if code is None or code >= 0:
        return str(code)
    try:
        return f"{code} (signal {signal.Signals(-code).name})"
    except ValueError:
        return f"{code} (signal {-code})"
