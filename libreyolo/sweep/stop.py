"""Stopping a sweep: SIGINT and SIGTERM become one `Stopped` (a `KeyboardInterrupt`) that
unwinds the point in flight, so it is recorded as interrupted and no further point starts.

Role: `stop_on_signals` holds the launcher's handlers while Hydra runs the points: the first
SIGINT or SIGTERM raises `Stopped(signum)` in the main thread and later ones are ignored, so the
clean-up (stopping the child) runs to its end; `signals_ignored` covers the report after it.
`raise_stopped` is the same handler for a point's child process. The signal is also kept
(`signal_of`): Ray's `ray.get` turns whatever a handler raises into a bare KeyboardInterrupt.

Must not: exit the process (the entry point sets the status: 128 + the signal).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, NoReturn

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_RECEIVED: list[int] = []  # the signal `stop_on_signals` caught, for a stop that lost it


class Stopped(KeyboardInterrupt):
    """SIGINT (Ctrl-C) or SIGTERM reached the sweep; `signum` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def signal_of(stop: BaseException) -> signal.Signals:
    """The signal behind an interrupt: `Stopped`'s, else the one `stop_on_signals` caught (Ray
    re-raises a bare KeyboardInterrupt), else SIGINT (Python's own Ctrl-C)."""
    fallback = _RECEIVED[-1] if _RECEIVED else signal.SIGINT
    return signal.Signals(getattr(stop, "signum", fallback))


def raise_stopped(signum: int, frame: object) -> NoReturn:
    """A signal handler: raise `Stopped(signum)`."""
    raise Stopped(signum)


def _first_only(signum: int, frame: object) -> NoReturn:
    for each in SIGNALS:
        signal.signal(each, signal.SIG_IGN)
    _RECEIVED.append(signum)
    raise Stopped(signum)


@contextmanager
def _handling(handler: Any) -> Iterator[None]:
    old = {each: signal.signal(each, handler) for each in SIGNALS}
    try:
        yield
    finally:
        for each, previous in old.items():
            signal.signal(each, previous)


def stop_on_signals() -> AbstractContextManager[None]:
    """SIGINT and SIGTERM raise `Stopped` once inside the body; the old handlers come back."""
    _RECEIVED.clear()
    return _handling(_first_only)


def signals_ignored() -> AbstractContextManager[None]:
    """SIGINT and SIGTERM do nothing inside the body (the report is written whole)."""
    return _handling(signal.SIG_IGN)
