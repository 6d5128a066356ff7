"""A trace's health, checked before its analysis is believed: GPU records missing, displaced or
impossible make every GPU time read from it wrong, and nothing else in the analysis notices.

Role: `reduce.py` counts the facts while it reduces the trace (`HealthFacts`); `trace_health`
turns them, and the per-step rows, into named checks with their limits (the names, limits and
meanings: `document/health_names.py`). A failed check makes the trace `suspect`: the verdict is
withheld (`analysis/verdict.py`), `summary` names the check, `compare` refuses a significance
call on it. The limits leave room for what sound traces hold (every real GPU fixture under
tests/ passes with nothing found). Pure: no I/O, no torch.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from libreyolo.document.health_names import (
    BUSY_SLACK_MS,
    MEANINGS,
    MISSING_SHARE,
    STEP_KERNEL_SPREAD,
    UNLINKED_SHARE,
    ZERO_DURATION_SHARE,
)
from libreyolo.document.model import HealthCheck, TraceHealth, TraceStep


@dataclass(frozen=True, slots=True)
class HealthFacts:
    """What `reduce.py` counted over the trace (the window's calls; every GPU record)."""

    num_gpu: int  # GPU records: kernels, copies, sets
    num_kernels: int
    num_launches: int  # launch API calls in the window
    launches_without_activity: int  # of those, whose correlation id no GPU record carries
    activity_without_launch: int
    starts_before_launch: int  # by more than BEFORE_LAUNCH_US
    outside_window: int  # starting more than the window's length after its end
    zero_timestamps: int
    zero_duration_kernels: int


def check(name: str, found: float, limit: float) -> HealthCheck:
    return HealthCheck(
        name=name, ok=found <= limit, found=found, limit=limit, meaning=MEANINGS[name]
    )


def health_of(checks: list[HealthCheck]) -> TraceHealth:
    return TraceHealth(suspect=not all(c.ok for c in checks), checks=checks)


def trace_health(facts: HealthFacts, steps: Sequence[TraceStep]) -> TraceHealth:
    """The checks of a trace with GPU activity or launch calls; none (sound) without either:
    a CPU trace has no GPU record to lose."""
    if facts.num_gpu == 0 and facts.num_launches == 0:
        return TraceHealth(suspect=False)
    checks = [
        check(
            "launches_without_gpu_activity",
            facts.launches_without_activity,
            int(MISSING_SHARE * facts.num_launches),
        ),
        check(
            "gpu_activity_without_launch",
            facts.activity_without_launch,
            int(UNLINKED_SHARE * facts.num_gpu),
        ),
        check("starts_before_launch", facts.starts_before_launch, 0),
        check("activity_outside_window", facts.outside_window, 0),
        check("zero_timestamps", facts.zero_timestamps, 0),
        check(
            "zero_duration_kernels",
            facts.zero_duration_kernels,
            int(ZERO_DURATION_SHARE * facts.num_kernels),
        ),
    ]
    if len(steps) >= 2:
        checks.append(
            check("kernels_per_step", spread([s.num_kernels for s in steps]), STEP_KERNEL_SPREAD)
        )
    over = sum(
        1
        for s in steps
        if s.gpu_span_ms is not None and s.gpu_busy_ms > s.gpu_span_ms + BUSY_SLACK_MS
    )
    checks.append(check("gpu_busy_within_step", over, 0))
    return health_of(checks)


def spread(counts: Sequence[float]) -> float:
    """The largest relative distance of a count from their median (0.0: all equal), 3 d.p."""
    middle = statistics.median(counts)
    if middle <= 0:
        return 0.0 if max(counts) <= 0 else 1.0
    return round(max(abs(c - middle) for c in counts) / middle, 3)
