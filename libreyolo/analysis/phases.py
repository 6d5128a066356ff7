"""Per-phase breakdown: GPU ms, wall ms, kernels and ops per step, and each measured step's own
split (the report's stacked bars; `phases --json` as `per_step`). Pure."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from libreyolo.analysis import stats
from libreyolo.analysis.contention import StepWait, step_waits
from libreyolo.analysis.metrics import per_step_divisor
from libreyolo.analysis.result_kind import ResultKind
from libreyolo.document.model import Profile
from libreyolo.errors import UnknownNameError


class PhaseRow(msgspec.Struct, frozen=True):
    phase: str
    gpu_ms_per_step: float
    wall_ms_per_step: float | None  # synced composition, else the phase's CPU time per step
    kernels_per_step: float
    ops_per_step: float
    unique_kernels: int


OUTLIER_IQRS = 1.5  # Tukey's fence: a step above Q3 + 1.5 × IQR of its kind is an outlier


class StepPhases(msgspec.Struct, frozen=True):
    """One measured step: its wall time and, where the collector timed them (synced steps),
    its phases. Bare traces give the ProfilerStep's CPU span instead (`source` "trace")."""

    index: int
    synced: bool | None  # None: a trace step, which says nothing about syncs
    wall_ms: float
    dataload_ms: float | None
    phase_ms: dict[str, float]
    outlier: bool
    source: str  # "collector" | "trace"


class CommShare(msgspec.Struct, frozen=True):
    """Collective time per step beside the phases (it overlaps them: never added to them),
    and the part of it nothing computed beside (the step waited for it)."""

    comm_ms_per_step: float
    exposed_ms_per_step: float | None


class PhaseBreakdown(msgspec.Struct, frozen=True):
    result_kind: ClassVar[ResultKind] = ResultKind.PHASES
    rows: tuple[PhaseRow, ...]
    steps: tuple[StepWait, ...] = ()  # each measured step's CPU wait, where it was sampled
    per_step: tuple[StepPhases, ...] = ()
    comm: CommShare | None = None  # None where no collective ran (one process)


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
    return PhaseBreakdown(
        rows=tuple(rows),
        steps=step_waits(profile),
        per_step=per_step(profile),
        comm=_comm(profile),
    )


def _comm(profile: Profile) -> CommShare | None:
    comm = stats.as_number(profile.metrics.get("comm_ms"))
    if not comm:
        return None
    exposed = stats.as_number(profile.metrics.get("comm_exposed_pct"))
    return CommShare(comm, None if exposed is None else round(comm * exposed / 100, 3))


def _fence(walls: list[float]) -> float:
    """Tukey's upper fence of `walls`; infinite below 4 values (no quartiles to speak of)."""
    if len(walls) < 4:
        return float("inf")
    q1 = stats.percentile(walls, 25) or 0.0
    q3 = stats.percentile(walls, 75) or 0.0
    return q3 + OUTLIER_IQRS * (q3 - q1)


def per_step(profile: Profile) -> tuple[StepPhases, ...]:
    """Every measured step in order, outliers flagged against the steps of the same kind
    (synced steps wait for the device and are slower by design)."""
    samples = profile.samples.steps
    if samples:
        fences = {
            synced: _fence([s.wall_ms for s in samples if s.synced is synced])
            for synced in (False, True)
        }
        return tuple(
            StepPhases(
                index=s.index,
                synced=s.synced,
                wall_ms=s.wall_ms,
                dataload_ms=s.dataload_ms,
                phase_ms=dict(s.phase_ms),
                outlier=s.wall_ms > fences[s.synced],
                source="collector",
            )
            for s in samples
        )
    steps = profile.trace.steps if profile.trace else []
    # A trace step's time: start to the end of the GPU work it launched, else its CPU span.
    walls = [t.cpu_ms if t.gpu_span_ms is None else t.gpu_span_ms for t in steps]
    fence = _fence(walls)
    return tuple(
        StepPhases(
            index=t.index,
            synced=None,
            wall_ms=wall,
            dataload_ms=None,
            phase_ms={},
            outlier=wall > fence,
            source="trace",
        )
        for t, wall in zip(steps, walls, strict=True)
    )
