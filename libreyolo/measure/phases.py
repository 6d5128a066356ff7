"""PhaseTimer: `step/<phase>` ranges for the trace, and per-phase wall time in synced steps.

Role: one callable `timer(name)` -> context manager, usable as the workload's `phases` hook.
Every call opens a `torch.profiler.record_function("step/<name>")` range (cheap and invisible
when no profiler runs). Only while `synced` is set does it bracket the phase with device syncs
and record its `perf_counter` wall time: unsynced iterations must carry no extra syncs, or their
timing would lose the CPU/GPU overlap they exist to show. Must not decide which iteration is
synced (window.py does) nor keep samples beyond the current iteration.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import msgspec.structs
import torch
from torch.profiler import record_function

from libreyolo.analysis import stats
from libreyolo.document.model import PhaseStat, TraceAnalysis
from libreyolo.measure.device import synchronize

MS_DIGITS = 4  # one precision for every collector millisecond: 0.1 microsecond


def ms(seconds: float) -> float:
    """Seconds as milliseconds, rounded once at the source."""
    return round(seconds * 1000.0, MS_DIGITS)


class PhaseTimer:
    """Phase ranges plus, in synced iterations, synced wall milliseconds per phase."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.synced = False
        self._seconds: dict[str, float] = {}

    def begin(self, *, synced: bool) -> None:
        """Start an iteration; phase walls are recorded only when `synced`."""
        self.synced = synced
        self._seconds = {}

    def wall_ms(self) -> dict[str, float]:
        """This iteration's synced wall per phase, in phase order (empty when unsynced)."""
        return {name: ms(sec) for name, sec in self._seconds.items()}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        with record_function(f"step/{name}"):
            if not self.synced:
                yield
                return
            # Sync first so the phase does not inherit work queued by the previous one.
            synchronize(self.device)
            start = time.perf_counter()
            try:
                yield
            finally:
                synchronize(self.device)
                self._seconds[name] = self._seconds.get(name, 0.0) + time.perf_counter() - start


def attach_phase_walls(trace: TraceAnalysis, walls: Mapping[str, Sequence[float]]) -> TraceAnalysis:
    """`trace` with each phase's synced wall per step (median over the synced samples).

    Filled for traced and untraced runs alike, so readers always see the composition (1.6.0 left
    it null in traced inference profiles and filled it only without a trace). The median resists
    the odd spike, which 1.6.0's stage means did not.
    """
    phases = []
    for phase in trace.phases:
        wall = stats.median(walls.get(phase.name, []))
        phases.append(msgspec.structs.replace(phase, wall_ms_per_step=_round(wall)))
    present = {phase.name for phase in trace.phases}
    for name, samples in walls.items():
        if name not in present and samples:
            phases.append(PhaseStat(name=name, wall_ms_per_step=_round(stats.median(samples))))
    return msgspec.structs.replace(trace, phases=phases)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, MS_DIGITS)
