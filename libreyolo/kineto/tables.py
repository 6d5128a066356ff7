"""The document's tables: kernels, categories, ops and phases over the analysed window.

Role: aggregate the linked events that reduce.py hands over into sorted document structs, with
kernel classes and tensor-core flags from classify.py and op self time from attribution.py. All
times are summed in trace µs and rounded once, on the way out. Must not: read files, print, or
import torch/numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress

from libreyolo.document.model import CallStat, CategoryStat, KernelStat, OpStat, PhaseStat
from libreyolo.kineto import classify
from libreyolo.kineto.attribution import OpTotals, PhaseMap, phase_cpu_us
from libreyolo.kineto.events import KERNEL, TraceEvents
from libreyolo.kineto.intervals import to_ms
from libreyolo.kineto.steps import StepWindow


@dataclass(slots=True)
class KernelTotals:
    """One kernel name's totals over the window, in µs, and per phase [µs, calls]."""

    category: str
    tensor_core: bool
    total_us: float = 0.0
    calls: int = 0
    phases: dict[str, list[float]] = field(default_factory=dict)
    op: str | None = None  # the cpu_op that launched most of its time

    @property
    def attention(self) -> bool:
        return self.category == classify.ATTENTION

    def stat(self, name: str) -> KernelStat:
        return KernelStat(
            name=name,
            category=self.category,
            tensor_core=self.tensor_core,
            total_ms=to_ms(self.total_us),
            num_calls=self.calls,
            op=self.op,
            phases={
                phase: CallStat(total_ms=to_ms(us), num_calls=int(calls))
                for phase, (us, calls) in _in_phase_order(self.phases)
            },
        )


def _in_phase_order(phases: dict[str, list[float]]) -> list[tuple[str, list[float]]]:
    return sorted(phases.items(), key=lambda item: classify.phase_rank(item[0]))


def kernel_table(
    events: TraceEvents,
    in_window: Sequence[int],
    phases: Sequence[int],
    phase_map: PhaseMap,
    compute_major: int | None,
    ops: Sequence[int],
) -> dict[str, KernelTotals]:
    """Kernels in the window by name, with per-phase totals and the launching op (phase ids and
    op name ids per GPU activity; op -1: none)."""
    gpu = events.gpu
    by_key: dict[tuple[int, int, int], list[float]] = {}  # (name, phase, op) -> [µs, calls]
    for i, inside in enumerate(in_window):
        if inside and gpu.kind[i] == KERNEL:
            sums = by_key.get(key := (gpu.name[i], phases[i], ops[i]))
            if sums is None:
                by_key[key] = sums = [0.0, 0]
            sums[0] += gpu.dur[i]
            sums[1] += 1
    table: dict[str, KernelTotals] = {}
    by_op: dict[tuple[int, int], float] = {}  # (kernel name id, op name id) -> µs
    for (name_id, phase_id, op_id), (us, calls) in by_key.items():
        name = events.names[name_id]
        row = table.get(name)
        if row is None:
            category = classify.classify_kernel(name)
            tensor_core = classify.uses_tensor_cores(name, category, compute_major)
            table[name] = row = KernelTotals(category, tensor_core)
        row.total_us += us
        row.calls += int(calls)
        in_phase = row.phases.setdefault(phase_map.phases[phase_id], [0.0, 0])
        in_phase[0] += us
        in_phase[1] += calls
        by_op[name_id, op_id] = by_op.get((name_id, op_id), 0.0) + us
    _set_ops(table, by_op, events.names)
    return table


def _set_ops(
    table: dict[str, KernelTotals], by_op: dict[tuple[int, int], float], names: list[str]
) -> None:
    """Give each kernel the op that launched most of its time (ties: the first op name); None
    when the largest share has no enclosing op."""
    best: dict[int, tuple[float, str, int]] = {}  # kernel name id -> (µs, op name, op id)
    for (name_id, op_id), us in by_op.items():
        op_name = names[op_id] if op_id >= 0 else ""
        held = best.get(name_id)
        if held is None or us > held[0] or (us == held[0] and op_name < held[1]):
            best[name_id] = (us, op_name, op_id)
    for name_id, (_, _, op_id) in best.items():
        if op_id >= 0:
            table[names[name_id]].op = names[op_id]


def kernel_stats(kernels: dict[str, KernelTotals]) -> list[KernelStat]:
    """The kernel table, most time first (ties by name)."""
    stats = [row.stat(name) for name, row in kernels.items()]
    return sorted(stats, key=lambda stat: (-stat.total_ms, stat.name))


def op_table(names: list[str], phase_map: PhaseMap, totals: OpTotals) -> list[OpStat]:
    """cpu_ops that start in the window, by name (`aggregate_ops`' totals): inclusive and self
    time, per phase; most self time first (ties by name)."""
    rows: dict[int, dict[str, list[float]]] = {}
    for name_id, phase_id, total_us, self_us, calls in totals.rows():
        rows.setdefault(name_id, {})[phase_map.phases[phase_id]] = [total_us, self_us, calls]
    table = []
    for name_id, phases in rows.items():
        total, own, calls = (sum(column) for column in zip(*phases.values(), strict=True))
        table.append(
            OpStat(
                name=names[name_id],
                self_ms=to_ms(own),
                total_ms=to_ms(total),
                num_calls=int(calls),
                phases={
                    phase: CallStat(total_ms=to_ms(us), num_calls=int(n), self_ms=to_ms(self_us))
                    for phase, (us, self_us, n) in _in_phase_order(phases)
                },
            )
        )
    return sorted(table, key=lambda op: (-(op.self_ms or 0.0), op.name))


def phase_table(
    kernels: dict[str, KernelTotals], ops: list[OpStat], phase_map: PhaseMap, window: StepWindow
) -> list[PhaseStat]:
    """Phases with kernels, ops or CPU range time in the window, in report order."""
    cpu_us = {p: us for p, us in phase_cpu_us(phase_map, window.start, window.end).items() if us}
    gpu_us: dict[str, float] = {}
    num_kernels: dict[str, int] = {}
    unique: dict[str, int] = {}
    for row in kernels.values():
        for phase, (us, calls) in row.phases.items():
            gpu_us[phase] = gpu_us.get(phase, 0.0) + us
            num_kernels[phase] = num_kernels.get(phase, 0) + int(calls)
            unique[phase] = unique.get(phase, 0) + 1
    num_ops: dict[str, int] = {}
    for op in ops:
        for phase, stat in op.phases.items():
            num_ops[phase] = num_ops.get(phase, 0) + stat.num_calls
    present = set(cpu_us) | set(num_kernels) | set(num_ops)
    return [
        PhaseStat(
            name=phase,
            gpu_ms=to_ms(gpu_us.get(phase, 0.0)),
            cpu_ms=to_ms(cpu_us[phase]) if phase in cpu_us else None,
            num_kernels=num_kernels.get(phase, 0),
            num_ops=num_ops.get(phase, 0),
            num_unique_kernels=unique.get(phase, 0),
        )
        for phase in sorted(present, key=classify.phase_rank)
    ]


def category_table(
    kernels: dict[str, KernelTotals], events: TraceEvents, in_window: Sequence[int]
) -> list[CategoryStat]:
    """Kernel time per category, plus the `memcpy` row of memcpy/memset activity."""
    totals: dict[str, list[float]] = {}
    for row in kernels.values():
        total = totals.setdefault(row.category, [0.0, 0])
        total[0] += row.total_us
        total[1] += row.calls
    gpu = events.gpu
    copies = [inside and kind != KERNEL for inside, kind in zip(in_window, gpu.kind, strict=True)]
    if any(copies):
        totals[classify.MEMCPY] = [sum(compress(gpu.dur, copies)), sum(copies)]
    rows = [
        CategoryStat(name=name, total_ms=to_ms(us), num_kernels=int(count))
        for name, (us, count) in totals.items()
        if count
    ]
    return sorted(rows, key=lambda row: (-row.total_ms, row.name))
