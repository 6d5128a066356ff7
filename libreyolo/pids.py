"""Whether a process id is still alive: how a folder left by a killed run is told from one a
running process is filling (measure's staging sets, the synthetic set's staging folders).
Stdlib only, no I/O beside the signal-0 probe."""

from __future__ import annotations

import os


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
