"""A sweep refused before its first point, raised from inside Hydra's run.

Role: `Refused` carries a `UsageError` out of Hydra's multirun (from the report callback's
folder checks or the tune sweeper's settings checks) to `libreyolo.sweep.app._sweep`, which
raises the error itself: one line on stderr, exit 2.

Must not: be an `Exception`: Hydra's `run_and_report` prints one with a traceback and exits 1.
"""

from __future__ import annotations

from libreyolo.errors import UsageError


class Refused(BaseException):
    """The sweep cannot start (`error` says why, in one line)."""

    def __init__(self, error: UsageError) -> None:
        super().__init__(error.message)
        self.error = error
