"""What changed between two profiles, per step: phases, the ops and the kernels that moved most.

Role: the "why" under compare's headline deltas. Phases come from `phase_breakdown`, ops and
kernels from the trace tables divided by each side's own step count, so runs with different
window lengths compare. Kernels match by `kernel_names.normalise` (rows sharing a normalised
name are merged on each side first); kernels still unmatched are then paired by the aten op that
launched them (`KernelStat.op`): one gone with one new of the same op, largest first, becomes one
`changed` row (cuDNN picking another algorithm for the same convolution). Ops match by their
exact aten name. A row on one side only is `new` or `gone`. A value a side does not have stays
None, never 0. Pure: no I/O, no torch or numpy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from libreyolo.analysis import kernel_names, stats
from libreyolo.analysis.metrics import per_step_divisor
from libreyolo.analysis.phases import phase_breakdown
from libreyolo.document.model import Profile

Status = Literal["changed", "new", "gone"]
MatchedBy = Literal["name", "op"]
OpTime = Literal["self", "total"]


@dataclass(frozen=True, slots=True)
class PhaseChange:
    phase: str
    wall_ms_before: float | None  # per step; None where that side has no such phase or time
    wall_ms_after: float | None
    gpu_ms_before: float | None  # None without a GPU on either side
    gpu_ms_after: float | None
    share_of_change: float | None  # wall change / the step's total change
    # The wall change's significance call over the `--repeat` trials (compare fills it):
    # None without trials on both sides, then `significance` says where the value came from.
    significant: bool | None = None
    significance: str = "single window"

    @property
    def wall_change_ms(self) -> float | None:
        return _minus(self.wall_ms_after, self.wall_ms_before)

    @property
    def gpu_change_ms(self) -> float | None:
        return _minus(self.gpu_ms_after, self.gpu_ms_before)


@dataclass(frozen=True, slots=True)
class RowChange:
    name: str
    status: Status
    ms_before: float | None  # per step; None on the side the row is missing from
    ms_after: float | None
    calls_before: float | None  # per step
    calls_after: float | None
    num_merged: tuple[int, int] = (1, 1)  # raw names merged into this row, before and after
    matched_by: MatchedBy = "name"  # "op": a gone and a new kernel paired by their launching op

    @property
    def change_ms(self) -> float:
        return (self.ms_after or 0.0) - (self.ms_before or 0.0)


@dataclass(frozen=True, slots=True)
class TableDiff:
    changed: tuple[RowChange, ...]  # on both sides, the `top` by |change|
    new: tuple[RowChange, ...]  # after only, the `top` by time
    gone: tuple[RowChange, ...]  # before only, the `top` by time
    num_matched: int
    num_new: int
    num_gone: int


@dataclass(frozen=True, slots=True)
class ProfileDiff:
    step_ms_before: float | None
    step_ms_after: float | None
    total_change_ms: float | None  # step_ms after − before, else the sum of phase wall changes
    total_from: Literal["step_ms", "phases"] | None
    # The phases' own wall change: on inference runs step_ms is the traced latency while phase
    # walls are synced stage times, so the two totals can differ and both are shown.
    phase_change_ms: float | None
    has_gpu: bool
    phases: tuple[PhaseChange, ...]
    op_time: OpTime  # "total" when either side lacks self times (libreyolo 1.6.0 files)
    ops: TableDiff
    kernels: TableDiff | None  # None when neither side ran on a GPU
    kernel_rule: str = kernel_names.RULE


def _minus(after: float | None, before: float | None) -> float | None:
    return None if after is None or before is None else after - before


def _has_gpu(profile: Profile) -> bool:
    return bool(profile.trace and profile.trace.has_gpu)


PhaseValues = tuple[str, float | None, float | None, float | None, float | None]


def _phases(before: Profile, after: Profile, has_gpu: bool) -> list[PhaseValues]:
    """(phase, wall before, wall after, gpu before, gpu after) per step, in report order;
    the GPU values None without a GPU."""
    rows_a = {r.phase: r for r in phase_breakdown(before).rows}
    rows_b = {r.phase: r for r in phase_breakdown(after).rows}
    names = list(rows_a) + [name for name in rows_b if name not in rows_a]
    out = []
    for name in names:
        a, b = rows_a.get(name), rows_b.get(name)
        values = (
            a.wall_ms_per_step if a else None,
            b.wall_ms_per_step if b else None,
            a.gpu_ms_per_step if a and has_gpu else None,
            b.gpu_ms_per_step if b and has_gpu else None,
        )
        if any(v is not None for v in values):  # a phase known on neither side says nothing
            out.append((name, *values))
    return out


Row = tuple[float, float, int]  # ms per step, calls per step, raw names merged


def _merge(rows: Iterable[tuple[str, float, int]], steps: int) -> dict[str, Row]:
    merged: dict[str, Row] = {}
    for name, ms, calls in rows:
        total_ms, total_calls, count = merged.get(name, (0.0, 0.0, 0))
        merged[name] = (total_ms + ms / steps, total_calls + calls / steps, count + 1)
    return merged


def _table(
    a: dict[str, Row],
    b: dict[str, Row],
    top: int,
    ops_a: dict[str, str] | None = None,
    ops_b: dict[str, str] | None = None,
) -> TableDiff:
    """Rows matched by name; then, with `ops_a`/`ops_b` (row name -> launching op), leftover
    gone and new rows of the same op paired into changed rows."""

    def row(name: str, status: Status) -> RowChange:
        ra, rb = a.get(name), b.get(name)
        return RowChange(
            name,
            status,
            ra[0] if ra else None,
            rb[0] if rb else None,
            ra[1] if ra else None,
            rb[1] if rb else None,
            (ra[2] if ra else 0, rb[2] if rb else 0),
        )

    matched = [row(n, "changed") for n in a if n in b]
    new = [row(n, "new") for n in b if n not in a]
    gone = [row(n, "gone") for n in a if n not in b]
    new.sort(key=lambda r: (-(r.ms_after or 0.0), r.name))
    gone.sort(key=lambda r: (-(r.ms_before or 0.0), r.name))
    if ops_a and ops_b:
        paired, new, gone = _pair_by_op(gone, new, ops_a, ops_b)
        matched += paired
    matched.sort(key=lambda r: (-abs(r.change_ms), r.name))
    n = max(top, 0)
    return TableDiff(
        tuple(matched[:n]), tuple(new[:n]), tuple(gone[:n]), len(matched), len(new), len(gone)
    )


def _pair_by_op(
    gone: list[RowChange], new: list[RowChange], ops_a: dict[str, str], ops_b: dict[str, str]
) -> tuple[list[RowChange], list[RowChange], list[RowChange]]:
    """(paired, new left, gone left): within each op, the i-th largest gone row with the i-th
    largest new row (both lists come largest first)."""
    waiting: dict[str, list[RowChange]] = {}
    for r in new:
        if (op := ops_b.get(r.name)) is not None:
            waiting.setdefault(op, []).append(r)
    paired: list[RowChange] = []
    taken: set[str] = set()
    gone_left = []
    for g in gone:
        op = ops_a.get(g.name)
        candidates = waiting.get(op) if op is not None else None
        if not candidates:
            gone_left.append(g)
            continue
        r = candidates.pop(0)
        taken.add(r.name)
        paired.append(
            RowChange(
                f"{g.name} -> {r.name} (same op {op})",
                "changed",
                g.ms_before,
                r.ms_after,
                g.calls_before,
                r.calls_after,
                (g.num_merged[0], r.num_merged[1]),
                matched_by="op",
            )
        )
    return paired, [r for r in new if r.name not in taken], gone_left


def _op_time(before: Profile, after: Profile) -> OpTime:
    ops = [op for p in (before, after) for op in (p.trace.ops if p.trace else [])]
    return "total" if any(op.self_ms is None for op in ops) else "self"


def _ops(profile: Profile, op_time: OpTime) -> dict[str, Row]:
    trace = profile.trace
    rows = [
        (
            op.name,
            op.total_ms if op_time == "total" or op.self_ms is None else op.self_ms,
            op.num_calls,
        )
        for op in (trace.ops if trace else [])
    ]
    return _merge(rows, per_step_divisor(trace))


def _kernels(profile: Profile) -> tuple[dict[str, Row], dict[str, str]]:
    """Kernel rows by normalised name, and each row's launching op: of the merged kernels that
    have one, the op of the largest (rows without any have none)."""
    trace = profile.trace
    kernels = trace.kernels if trace else []
    names = [kernel_names.normalise(k.name) for k in kernels]
    rows = [(name, k.total_ms, k.num_calls) for name, k in zip(names, kernels, strict=True)]
    ops: dict[str, str] = {}
    largest: dict[str, float] = {}
    for name, k in zip(names, kernels, strict=True):
        if k.op is not None and k.total_ms > largest.get(name, -1.0):
            ops[name], largest[name] = k.op, k.total_ms
    return _merge(rows, per_step_divisor(trace)), ops


def diff_profiles(before: Profile, after: Profile, top: int = 10) -> ProfileDiff:
    """Per-step changes from `before` to `after`: phases, and the `top` ops and kernels."""
    has_gpu = _has_gpu(before) or _has_gpu(after)
    phase_values = _phases(before, after, has_gpu)
    step_a = stats.as_number(before.metrics.get("step_ms"))
    step_b = stats.as_number(after.metrics.get("step_ms"))
    total = _minus(step_b, step_a)
    total_from: Literal["step_ms", "phases"] | None = "step_ms" if total is not None else None
    walls = [_minus(wall_b, wall_a) for _, wall_a, wall_b, _, _ in phase_values]
    phase_total = sum(w for w in walls if w is not None) if walls and None not in walls else None
    if total is None and phase_total is not None:
        total, total_from = phase_total, "phases"
    phases = tuple(
        PhaseChange(name, wa, wb, ga, gb, _share(_minus(wb, wa), total))
        for name, wa, wb, ga, gb in phase_values
    )
    op_time = _op_time(before, after)
    return ProfileDiff(
        step_ms_before=step_a,
        step_ms_after=step_b,
        total_change_ms=total,
        total_from=total_from,
        phase_change_ms=phase_total,
        has_gpu=has_gpu,
        phases=phases,
        op_time=op_time,
        ops=_table(_ops(before, op_time), _ops(after, op_time), top),
        kernels=_kernel_table(before, after, top) if has_gpu else None,
    )


def _kernel_table(before: Profile, after: Profile, top: int) -> TableDiff:
    (a, ops_a), (b, ops_b) = _kernels(before), _kernels(after)
    return _table(a, b, top, ops_a, ops_b)


def _share(change: float | None, total: float | None) -> float | None:
    if change is None or not total:
        return None
    return change / total


PhaseTest = Callable[[str], tuple[bool | None, str]]  # phase -> (significant, how it was called)


def with_phase_tests(diff: ProfileDiff, test: PhaseTest) -> ProfileDiff:
    """`diff` with each phase's wall change called by `test` (compare's rule on the trials of
    `<phase>_wall_ms`, which every trial's metric map holds)."""
    phases = []
    for row in diff.phases:
        significant, how = test(row.phase)
        phases.append(dataclasses.replace(row, significant=significant, significance=how))
    return dataclasses.replace(diff, phases=tuple(phases))
