"""Per-phase breakdown: GPU ms, wall ms, kernels and ops per step. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from libreyolo.analysis.contention import StepWait, step_waits
from libreyolo.analysis.metrics import per_step_divisor
from libreyolo.document.model import Profile
from libreyolo.errors import UnknownNameError


@dataclass(frozen=True, slots=True)
class PhaseRow:
    phase: str
    gpu_ms_per_step: float
    wall_ms_per_step: float | None  # synced composition, else the phase's CPU time per step
    kernels_per_step: float
    ops_per_step: float
    unique_kernels: int


@dataclass(frozen=True, slots=True)
class PhaseBreakdown:
    kind: ClassVar[str] = "phases"
    rows: tuple[PhaseRow, ...]
    steps: tuple[StepWait, ...] = ()  # each measured step's CPU wait, where it was sampled


def phase_names(profile: Profile) -> tuple[str, ...]:
    """The phases present in the profile, in report order."""
    return tuple(p.name for p in profile.trace.phases) if profile.trace else ()


def require_phase(profile: Profile, phase: str) -> None:
    """UnknownNameError (exit 2) listing the phases present when `phase` is not one of them."""
    names = phase_names(profile)
    if phase not in names:
        raise UnknownNameError(f"unknown phase '{phase}'. available: {', '.join(names)}")


def phase_breakdown(profile: Profile) -> PhaseBreakdown:
    """One row per phase, per step."""
    trace = profile.trace
    n = per_step_divisor(trace)
    rows = []
    for phase in trace.phases if trace else []:
        wall = phase.wall_ms_per_step
        if wall is None and phase.cpu_ms is not None:
            wall = phase.cpu_ms / n
        rows.append(
            PhaseRow(
                phase.name,
                phase.gpu_ms / n,
                wall,
                phase.num_kernels / n,
                phase.num_ops / n,
                phase.num_unique_kernels,
            )
        )
    return PhaseBreakdown(rows=tuple(rows), steps=step_waits(profile))
