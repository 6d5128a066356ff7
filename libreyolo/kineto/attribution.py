"""Phase attribution on the CPU side, and the op table with self time.

Role: decide which phase a CPU event belongs to: the innermost phase range (a `step/<phase>`
annotation or a recognised label) enclosing it *on its own thread*; launch calls on an autograd
engine thread outside any range belong to `backward`. Kernels take the phase of the call that
launched them (reduce.py follows the correlation id), never of the CPU range their GPU timestamps
happen to fall in. Also aggregates ops with exclusive (self) time. Must not: read files, print,
or import torch/numpy.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from math import inf
from typing import Any

from libreyolo.document.phases import BACKWARD, UNPHASED
from libreyolo.kineto.classify import classify_phase
from libreyolo.kineto.events import Columns, TraceEvents
from libreyolo.kineto.intervals import union_of
from libreyolo.kineto.steps import STEP_PREFIX

# Nested CPU ranges of ns-resolution traces overlap their parent by a fraction of a µs (the V100
# fixture); a range that ends less than this after its parent still nests inside it.
NESTING_TOLERANCE_US = 1.0
# Ops of the autograd engine. A thread that runs them but holds no phase or ProfilerStep range
# is the engine's device thread (`pt_autograd_0`), so its work is backward work. (On CPU the
# engine runs on the training loop's own thread, which holds the ranges: not marked.)
_BACKWARD_THREAD_OP = "autograd::engine::evaluate_function:"
_NO_PHASE = -1

Ranges = dict[tuple[int, int], tuple[list[float], list[float]]]  # (phase, thread) -> ts, dur


@dataclass(frozen=True, slots=True)
class PhaseMap:
    """The innermost phase at any instant, per thread (ids index `phases`)."""

    phases: list[str]
    breakpoints: dict[int, tuple[list[float], list[int]]]  # thread -> (times, phase from then on)
    fallback: dict[int, int]  # thread -> phase outside any range (autograd threads: backward)
    ranges: Ranges

    def phase_span(self, thread: int, time: float) -> tuple[int, float, float]:
        """Phase id at `time` on `thread` (outside ranges: the thread's fallback or `unphased`),
        and the interval [from, until) where it holds, so callers can skip repeated lookups."""
        outside = self.fallback.get(thread, self.unphased)
        found = self.breakpoints.get(thread)
        if found is None:
            return outside, -inf, inf
        times, phases = found
        position = bisect_right(times, time) - 1
        until = times[position + 1] if position + 1 < len(times) else inf
        if position < 0:
            return outside, -inf, until
        phase = phases[position]
        return (outside if phase == _NO_PHASE else phase), times[position], until

    @property
    def unphased(self) -> int:
        return len(self.phases) - 1


def build_phase_map(events: TraceEvents) -> PhaseMap:
    """Collect phase ranges from annotations and cpu_ops and flatten them per thread."""
    labels = {}
    for i, name in enumerate(events.names):
        phase = classify_phase(name)
        if phase is not None:
            labels[i] = phase
    ranges: dict[tuple[str, int], tuple[list[float], list[float]]] = {}
    if labels:
        for columns in (events.ranges, events.ops):
            _collect_ranges(columns, labels, ranges)
    backward_threads = _backward_threads(events, {thread for _, thread in ranges})
    phases = sorted({phase for phase, _ in ranges} | ({BACKWARD} if backward_threads else set()))
    phase_ids = {phase: i for i, phase in enumerate(phases)}
    phases.append(UNPHASED)
    by_thread: dict[int, list[tuple[float, float, int]]] = {}
    for (phase, thread), (starts, durs) in ranges.items():
        by_thread.setdefault(thread, []).extend(
            (start, start + dur, phase_ids[phase]) for start, dur in zip(starts, durs, strict=True)
        )
    breakpoints = {thread: _flatten(spans) for thread, spans in by_thread.items()}
    fallback = dict.fromkeys(backward_threads, phase_ids.get(BACKWARD, _NO_PHASE))
    by_id = {(phase_ids[phase], thread): spans for (phase, thread), spans in ranges.items()}
    return PhaseMap(phases, breakpoints, fallback, by_id)


def shapes_ranges(name: str) -> bool:
    """Whether cpu_ops of this name must be in memory before the ops are swept (op_stream.py):
    the window and the phase map are built from ProfilerStep ranges and phase labels."""
    return name.startswith(STEP_PREFIX) or classify_phase(name) is not None


def is_engine_op(name: str) -> bool:
    """Whether a cpu_op of this name is the autograd engine's (its thread may be backward's)."""
    return name.startswith(_BACKWARD_THREAD_OP)


def _collect_ranges(
    columns: Columns,
    labels: dict[int, str],
    ranges: dict[tuple[str, int], tuple[list[float], list[float]]],
) -> None:
    """Add the events of `columns` whose name is a phase label to `ranges` (phase, thread)."""
    for i in columns.rows_named(set(labels)):
        key = (labels[columns.name[i]], columns.thread[i])
        starts, durs = ranges.setdefault(key, ([], []))
        starts.append(columns.ts[i])
        durs.append(columns.dur[i])


def _flatten(spans: list[tuple[float, float, int]]) -> tuple[list[float], list[int]]:
    """Breakpoints (time, innermost phase from then on) of possibly nested ranges of one thread."""
    spans.sort(key=lambda span: (span[0], -span[1]))
    times: list[float] = []
    phases: list[int] = []
    stack: list[tuple[float, int]] = []  # (end, phase) of the open ranges

    def emit(time: float, phase: int) -> None:
        time = max(time, times[-1]) if times else time  # tolerated overlaps never go back
        if times and times[-1] == time:
            phases[-1] = phase
        else:
            times.append(time)
            phases.append(phase)

    for start, end, phase in spans:
        while stack and (stack[-1][0] <= start or end > stack[-1][0] + NESTING_TOLERANCE_US):
            closed_end, _ = stack.pop()
            if closed_end <= start:
                emit(closed_end, stack[-1][1] if stack else _NO_PHASE)
        stack.append((end, phase))
        emit(start, phase)
    while stack:
        closed_end, _ = stack.pop()
        emit(closed_end, stack[-1][1] if stack else _NO_PHASE)
    return times, phases


def _backward_threads(events: TraceEvents, phase_threads: set[int]) -> set[int]:
    """Threads that run autograd engine ops but hold no phase or ProfilerStep range."""
    names = events.names
    if events.spool is not None:
        engine = events.spool.marked_threads
    else:
        marked = {i for i, name in enumerate(names) if is_engine_op(name)}
        engine = {events.ops.thread[i] for i in events.ops.rows_named(marked)}
    if not engine:
        return set()
    step_names = {i for i, name in enumerate(names) if name.startswith(STEP_PREFIX)}
    steps = {events.ranges.thread[i] for i in events.ranges.rows_named(step_names)}
    return engine - phase_threads - steps


def phase_cpu_us(phase_map: PhaseMap, start: float, end: float) -> dict[str, float]:
    """CPU time inside each phase's ranges within [start, end): a union per thread, summed."""
    totals: dict[str, float] = {}
    for (phase, _thread), (starts, durs) in phase_map.ranges.items():
        name = phase_map.phases[phase]
        totals[name] = totals.get(name, 0.0) + union_of(starts, durs).covered(start, end)
    return totals


@dataclass(frozen=True, slots=True)
class OpTotals:
    """Inclusive µs, exclusive µs and calls per key = op name id * stride + phase id."""

    stride: int
    total_us: list[float]
    self_us: list[float]
    calls: list[int]

    def rows(self) -> Iterator[tuple[int, int, float, float, int]]:
        """(name id, phase id, total µs, self µs, calls) of every key with calls."""
        for key, calls in enumerate(self.calls):
            if calls:
                name, phase = divmod(key, self.stride)
                yield name, phase, self.total_us[key], self.self_us[key], calls


def aggregate_ops(
    ops: Columns,
    phase_map: PhaseMap,
    start: float,
    end: float,
    skip: set[int],
    order: list[int] | None = None,
) -> OpTotals:
    """Inclusive and self time of every cpu_op that starts in [start, end), by name and phase.

    Self time subtracts direct cpu_op children on the same thread, found by nesting with
    NESTING_TOLERANCE_US; ops named in `skip` (ProfilerStep ranges) still nest but are not listed.
    This loop runs once per op of the trace, so it is flat: totals are plain lists indexed by key,
    and an op's self time is added when it leaves the stack. `order`: `nesting_order` of the
    ops, when the caller already has it.
    """
    stride = len(phase_map.phases)
    size = (max(ops.name) + 1) * stride if len(ops) else 0
    total, own, calls = [0.0] * size, [0.0] * size, [0] * size
    ts, dur, names, threads = ops.ts, ops.dur, ops.name, ops.thread
    stack: list[list[Any]] = []  # open ops of a thread: [end, end + tolerance, key, self µs]
    current = -1
    phase, phase_from, phase_until = 0, inf, -inf  # the phase holds on [phase_from, phase_until)
    for i in order if order is not None else nesting_order(ts, dur, threads):
        if threads[i] != current:
            _close_all(stack, own)
            current = threads[i]
            phase_from, phase_until = inf, -inf
        begin = ts[i]
        length = dur[i]
        finish = begin + length
        while stack:
            top = stack[-1]
            if top[0] > begin and finish <= top[1]:
                top[3] -= (finish if finish < top[0] else top[0]) - begin
                break
            stack.pop()
            if top[2] >= 0 and top[3] > 0.0:
                own[top[2]] += top[3]
        key = -1
        if start <= begin < end and names[i] not in skip:
            if not phase_from <= begin < phase_until:
                phase, phase_from, phase_until = phase_map.phase_span(current, begin)
            key = names[i] * stride + phase
            total[key] += length
            calls[key] += 1
        stack.append([finish, finish + NESTING_TOLERANCE_US, key, length])
    _close_all(stack, own)
    return OpTotals(stride, total, own, calls)


def _close_all(stack: list[list[Any]], own: list[float]) -> None:
    """Close every open op of a thread (the same bookkeeping as aggregate_ops' loop)."""
    for _end, _limit, key, remaining in stack:
        if key >= 0 and remaining > 0.0:
            own[key] += remaining
    stack.clear()


def nesting_order(ts: Sequence[float], dur: Sequence[float], threads: Sequence[int]) -> list[int]:
    """Indices by (thread, start, longest first): parents before the children they enclose.

    Kineto writes each thread's ops in start order, so the two stable sorts run in linear time;
    the rare equal starts are then put longest first.
    """
    order = sorted(range(len(ts)), key=ts.__getitem__)
    order.sort(key=threads.__getitem__)
    starts = [ts[i] for i in order]
    tied = [k for k in range(1, len(starts)) if starts[k] == starts[k - 1]]
    for k in tied:
        low = k - 1
        while low > 0 and starts[low - 1] == starts[k]:
            low -= 1
        order[low : k + 1] = sorted(order[low : k + 1], key=lambda i: (threads[i], -dur[i]))
    return order
