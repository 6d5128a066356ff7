"""One streamed sweep over the spooled cpu_ops: op totals with self time, and launching ops.

Role: the streaming twin of `attribution.aggregate_ops` and `launch_ops.launching_ops`. Kineto
writes each thread's ops in start order, so a stack per thread, carried from block to block,
sees them in the order those functions sort them into, and neither sort nor the whole op column
is needed: memory is one block plus a stack per thread. The same loop answers, per thread, which
op encloses each launching call (calls sorted by start, answered as the ops pass them). Equal
starts must come longest first: when they do not (ns traces: the V100 fixture), the sweep starts
over holding each thread's latest equal-start ops back until a later start shows the group is
whole. A thread whose ops go back in time raises `Disordered`: the caller then sorts the whole
column instead. Must not: read trace files, print, or import torch/numpy.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from itertools import groupby
from math import inf
from typing import Any

from libreyolo.kineto.attribution import NESTING_TOLERANCE_US, OpTotals, PhaseMap
from libreyolo.kineto.columns import Columns
from libreyolo.kineto.spool import OpSpool

# A thread's launching calls, by start: (their starts, their indices in the calls columns).
Queries = tuple["array[float]", "array[int]"]
Op = tuple[float, float, int]  # (ts, dur, name id)
_NONE: Queries = (array("d"), array("i"))
# (end, end + tolerance, key, self µs) of no op: it ends before any start and counts nowhere.
_NO_TOP = (-inf, -inf, -1, 0.0)


class Disordered(Exception):
    """A thread's ops are not in start order: they must be sorted."""


class _ShortestFirst(Disordered):
    """Ops with equal starts come shortest first: the sweep must reorder them."""


class _Thread:
    """What the sweep carries for one thread from one block to the next."""

    __slots__ = (
        "launch_stack",
        "next_query",
        "pending",
        "phase",
        "prev_dur",
        "prev_ts",
        "queries",
        "stack",
        "top",
    )

    def __init__(self, queries: Queries) -> None:
        self.stack: list[list[Any]] = []  # open ops: [end, end + tolerance, key, self µs]
        # The latest op, above the stack: it goes on the stack only once a child shows up, so
        # leaf ops (most of them) cost no list. NO_TOP until the thread's first op.
        self.top: tuple[float, float, int, float] = _NO_TOP
        self.phase: tuple[int, float, float] = (0, inf, -inf)  # phase on [from, until)
        self.prev_ts = -inf
        self.prev_dur = inf
        self.queries = queries
        self.next_query = 0
        # (end, name id) of ops started, while calls of this thread are still to be answered
        self.launch_stack: list[tuple[float, int]] | None = [] if len(queries[0]) else None
        self.pending: list[Op] = []  # reordering sweeps: the latest ops with one start


def sweep_ops(
    spool: OpSpool,
    phase_map: PhaseMap,
    window: tuple[float, float],
    skip: set[int],
    num_names: int,
    queries: dict[int, Queries],
    num_calls: int,
) -> tuple[OpTotals, array[int]]:
    """(`aggregate_ops`' totals of the ops that start in `window`, per call the name id of the
    innermost op enclosing it, -1 for none or a call that launched nothing). `queries`: per
    thread, its launching calls sorted by start.

    Raises:
        Disordered: a thread's ops go back in time.
    """
    args = (spool, queries, _Sweep(phase_map, window, skip, num_names, num_calls))
    try:
        sweep = _sweep(*args, reorder=False)
    except _ShortestFirst:
        args = (spool, queries, _Sweep(phase_map, window, skip, num_names, num_calls))
        sweep = _sweep(*args, reorder=True)
    return OpTotals(sweep.stride, sweep.total, sweep.own, sweep.calls), sweep.found


def _sweep(spool: OpSpool, queries: dict[int, Queries], sweep: _Sweep, reorder: bool) -> _Sweep:
    states: dict[int, _Thread] = {}
    for block in spool.blocks():
        for thread, ops in _by_thread(block):
            state = states.get(thread)
            if state is None:
                state = states[thread] = _Thread(queries.get(thread, _NONE))
            sweep.run(thread, state, _longest_first(state, ops) if reorder else ops)
    for thread in sorted(states):  # aggregate_ops closes threads in id order
        state = states[thread]
        if state.pending:
            sweep.run(thread, state, iter(sorted(state.pending, key=_minus_dur)))
        sweep.close(state)
    return sweep


def _longest_first(state: _Thread, ops: Iterator[Op]) -> Iterator[Op]:
    """The thread's ops with each group of equal starts longest first (stable, as
    `attribution.nesting_order` sorts them); the last group waits in `state.pending`."""
    pending = state.pending
    for op in ops:
        if pending and op[0] != pending[0][0]:
            if len(pending) > 1:
                pending.sort(key=_minus_dur)
            yield from pending
            pending.clear()
        pending.append(op)


def _minus_dur(op: Op) -> float:
    return -op[1]


def _by_thread(block: Columns) -> Iterator[tuple[int, Iterator[Op]]]:
    """Each thread of a block with its ops as (ts, dur, name id), in file order."""
    threads = block.thread
    if len(set(threads)) == 1:  # the usual block: one thread, no sort
        yield threads[0], zip(block.ts, block.dur, block.name, strict=True)
        return
    order = sorted(range(len(threads)), key=threads.__getitem__)  # stable: file order kept
    for thread, rows in groupby(order, threads.__getitem__):
        index = list(rows)
        columns = (block.ts, block.dur, block.name)
        yield thread, zip(*(map(column.__getitem__, index) for column in columns), strict=True)


class _Sweep:
    def __init__(
        self,
        phase_map: PhaseMap,
        window: tuple[float, float],
        skip: set[int],
        num_names: int,
        num_calls: int,
    ) -> None:
        self.phase_map = phase_map
        self.start, self.end = window
        self.stride = len(phase_map.phases)
        # Per name id the first key of its totals, -1 for names in `skip`: one list lookup an op
        # instead of a set test and a multiplication.
        self.bases = [-1 if name in skip else name * self.stride for name in range(num_names)]
        size = num_names * self.stride
        self.total, self.own, self.calls = [0.0] * size, [0.0] * size, [0] * size
        self.found = array("i", [-1]) * num_calls

    def run(self, thread: int, state: _Thread, ops: Iterator[Op]) -> None:
        """Sweep one thread's ops of one block, (ts, dur, name id) in file order. The loop runs
        once per op of the trace: everything it touches is a local."""
        total, own, calls, bases = self.total, self.own, self.calls, self.bases
        start, end, phase_span = self.start, self.end, self.phase_map.phase_span
        tolerance = NESTING_TOLERANCE_US
        stack, launch_stack = state.stack, state.launch_stack
        phase, phase_from, phase_until = state.phase
        prev_ts, prev_dur = state.prev_ts, state.prev_dur
        query_ts = state.queries[0][state.next_query] if launch_stack is not None else inf
        top_end, top_limit, top_key, top_self = state.top
        for begin, length, name in ops:
            if begin <= prev_ts and (begin < prev_ts or length > prev_dur):
                raise _ShortestFirst if begin == prev_ts else Disordered
            prev_ts, prev_dur = begin, length
            finish = begin + length
            if query_ts < begin:
                query_ts = self._answer(state, begin)
                launch_stack = state.launch_stack
            if launch_stack is not None:
                while launch_stack and launch_stack[-1][0] <= begin:
                    launch_stack.pop()  # ended before this op: encloses no later call
                launch_stack.append((finish, name))
            if top_end > begin and finish <= top_limit:  # a child of the latest op
                top_self -= (finish if finish < top_end else top_end) - begin
                stack.append([top_end, top_limit, top_key, top_self])
            else:
                if top_key >= 0 and top_self > 0.0:
                    own[top_key] += top_self
                while stack:
                    top = stack[-1]
                    if top[0] > begin and finish <= top[1]:
                        top[3] -= (finish if finish < top[0] else top[0]) - begin
                        break
                    stack.pop()
                    if top[2] >= 0 and top[3] > 0.0:
                        own[top[2]] += top[3]
            key = bases[name]
            if key >= 0 and start <= begin < end:
                if not phase_from <= begin < phase_until:
                    phase, phase_from, phase_until = phase_span(thread, begin)
                key += phase
                total[key] += length
                calls[key] += 1
            else:
                key = -1
            top_end, top_limit, top_key, top_self = finish, finish + tolerance, key, length
        state.top = (top_end, top_limit, top_key, top_self)
        state.phase = (phase, phase_from, phase_until)
        state.prev_ts, state.prev_dur = prev_ts, prev_dur

    def _answer(self, state: _Thread, until: float) -> float:
        """Answer the thread's calls that start before `until` from its launch stack; the start
        of the next call (inf: none left, and the launch stack is dropped)."""
        (starts, calls), stack, found = state.queries, state.launch_stack, self.found
        assert stack is not None
        at = state.next_query
        while at < len(starts) and (time := starts[at]) < until:
            while stack and stack[-1][0] <= time:
                stack.pop()
            if stack:
                found[calls[at]] = stack[-1][1]
            at += 1
        state.next_query = at
        if at == len(starts):
            state.launch_stack = None
            return inf
        return starts[at]

    def close(self, state: _Thread) -> None:
        """The thread's last calls, then its open ops (as `attribution._close_all`)."""
        if state.launch_stack is not None:
            self._answer(state, inf)
        own = self.own
        for _end, _limit, key, remaining in [*state.stack, state.top]:
            if key >= 0 and remaining > 0.0:
                own[key] += remaining
        state.stack.clear()
        state.top = _NO_TOP
