"""Which aten op launched each GPU activity: the innermost cpu_op around its launching call.

Role: kernels carry a correlation id to the runtime call that launched them (reduce.py links
them); that call runs inside a stack of cpu_ops on its own thread, and the innermost one
(`aten::cudnn_convolution`, `aten::mm`) names what the kernel computes whatever algorithm the
library picked. compare uses it to pair a kernel that is gone with a renamed one that is new.
One sweep over the ops in nesting order, merged with the launching calls sorted the same way:
linear after two sorts, no lookup per call. Must not: read files, print, or import torch/numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import inf

from libreyolo.kineto.attribution import nesting_order
from libreyolo.kineto.events import TraceEvents

NO_OP = -1


def launching_ops(
    events: TraceEvents, launcher: Sequence[int], order: list[int] | None = None
) -> list[int]:
    """Per GPU activity: the name id of the innermost cpu_op enclosing the start of its
    launching call (index into `events.calls`, -1: none) on that call's thread; NO_OP when
    there is none. `order`: the ops' `nesting_order`, when the caller already has it."""
    calls, ops = events.calls, events.ops
    call_ts, call_thread = calls.ts, calls.thread
    queries = sorted({k for k in launcher if k >= 0}, key=call_ts.__getitem__)
    if not queries:  # CPU traces: no launching call, so no sweep over every op
        return [NO_OP] * len(launcher)
    queries.sort(key=call_thread.__getitem__)  # stable: by thread, then start
    queries.append(-1)  # sentinel: no more calls
    found: dict[int, int] = {-1: NO_OP}
    ts, dur, names, threads = ops.ts, ops.dur, ops.name, ops.thread
    stack: list[tuple[float, int]] = []  # (end, name id) of ops started on `current`
    current = -1
    position = 0
    no_thread = len(events.threads)  # past every thread: the sentinel's position

    def answer(until_thread: int, until_ts: float) -> int:
        """Answer the calls before (until_thread, until_ts) from the stack; the next position."""
        at = position
        while (k := queries[at]) >= 0:
            thread, time = call_thread[k], call_ts[k]
            if thread > until_thread or (thread == until_thread and time >= until_ts):
                break
            if thread != current:
                found[k] = NO_OP
            else:
                while stack and stack[-1][0] <= time:  # ended before: never enclose later calls
                    stack.pop()
                found[k] = stack[-1][1] if stack else NO_OP
            at += 1
        return at

    def next_call() -> tuple[int, float]:
        k = queries[position]
        return (call_thread[k], call_ts[k]) if k >= 0 else (no_thread, inf)

    # The loop runs once per op of the trace: the next call's (thread, start) stay in locals.
    q_thread, q_ts = next_call()
    for i in order if order is not None else nesting_order(ts, dur, threads):
        thread, begin = threads[i], ts[i]
        if q_thread < thread or (q_thread == thread and q_ts < begin):
            position = answer(thread, begin)
            q_thread, q_ts = next_call()
        if thread != current:
            stack.clear()
            current = thread
        stack.append((begin + dur[i], names[i]))
    answer(no_thread, inf)  # the calls after the last op
    return [found[k] for k in launcher]
