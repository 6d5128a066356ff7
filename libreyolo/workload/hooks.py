"""The phase hook a workload step names its phases through.

Role: one type shared by the training and inference steps. The measuring layer passes a hook
that times and syncs; the workload only opens `phases(name)` around each phase. Must not time,
sync or profile anything itself.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

PhaseHook = Callable[[str], AbstractContextManager[object]]


def no_phases(name: str) -> AbstractContextManager[object]:
    """The default phase hook: does nothing."""
    return nullcontext()
