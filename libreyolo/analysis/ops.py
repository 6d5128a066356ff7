"""The op table: aten/autograd ops by self CPU time (total time beside it). Pure."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from libreyolo.analysis.metrics import per_step_divisor
from libreyolo.analysis.phases import require_phase
from libreyolo.analysis.result_kind import ResultKind
from libreyolo.document.model import Profile


class OpRow(msgspec.Struct, frozen=True):
    name: str
    self_ms_per_step: float | None  # None for v1 files (inclusive time only)
    total_ms_per_step: float
    share: float  # of the scope's self time (inclusive for v1 files)
    num_per_step: float


class OpTable(msgspec.Struct, frozen=True):
    result_kind: ClassVar[ResultKind] = ResultKind.OPS
    phase: str | None
    inclusive_only: bool  # True when the profile has no self times (libreyolo 1.6.0 files)
    rows: tuple[OpRow, ...]


def top_ops(profile: Profile, *, top: int = 20, phase: str | None = None) -> OpTable:
    """Ops of the window or one phase by self CPU time, cut to `top`."""
    if phase is not None:
        require_phase(profile, phase)
    trace = profile.trace
    n = per_step_divisor(trace)
    scoped = []
    for op in trace.ops if trace else []:
        stat = op.phases.get(phase) if phase is not None else op
        if stat is not None:
            scoped.append((op.name, stat.self_ms, stat.total_ms, stat.num_calls))
    inclusive_only = any(self_ms is None for _, self_ms, _, _ in scoped)
    rank = [
        (total if inclusive_only or self_ms is None else self_ms) for _, self_ms, total, _ in scoped
    ]
    denominator = sum(rank) or 1.0
    rows = [
        OpRow(
            name, None if self_ms is None else self_ms / n, total / n, ms / denominator, calls / n
        )
        for (name, self_ms, total, calls), ms in zip(scoped, rank, strict=True)
    ]
    rows.sort(key=lambda row: (-row.share, row.name))
    return OpTable(phase=phase, inclusive_only=inclusive_only, rows=tuple(rows[: max(top, 0)]))
