"""Collectives that run on the host: gloo's, on threads of their own, beside the step's ops.

Role: on a CPU process group, torch.profiler records each gloo collective as a `gloo:<op>`
annotation on one of gloo's worker threads (the whole collective, waiting for the peers
included), and the step's own work as ATen ops on the thread that runs the profiler steps.
`host_comm` measures, inside the window, the union of those collectives and the part of it
during which the step's thread ran an ATen op: HolisticTraceAnalysis's communication time and
computation overlap, with the host's ops in place of GPU kernels. The rest of it is exposed:
the step's thread had nothing to do but wait; it is also split by the phase it fell in (a
rank waits for its peers in the loss's all-reduce, in the forward, as well as for DDP's
gradients at the end of backward).

Must not: read files, print, or import torch/numpy.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import compress

from libreyolo.kineto.columns import Columns
from libreyolo.kineto.events import TraceEvents
from libreyolo.kineto.intervals import Union, union_of
from libreyolo.kineto.steps import STEP_PREFIX, StepWindow

COLLECTIVE_PREFIX = "gloo:"
COMPUTE_PREFIX = "aten::"
PHASE_PREFIX = "step/"  # the collector's phase ranges (`measure/phases.py`)


@dataclass(frozen=True, slots=True)
class HostComm:
    """Inside the window: the collectives' union, the part of it the step thread computed
    beside, and by phase (`step/<phase>` ranges) the exposed rest, all µs."""

    comm_us: float
    overlap_us: float
    exposed_us_by_phase: dict[str, float]


def host_comm(events: TraceEvents, window: StepWindow) -> HostComm | None:
    """The host's collectives in the window (`HostComm`); None when no gloo collective was
    recorded."""
    names = events.names
    collective = {i for i, name in enumerate(names) if name.startswith(COLLECTIVE_PREFIX)}
    rows = events.ranges.rows_named(collective)
    if not rows:
        return None
    ranges = events.ranges
    comm = _clipped(((ranges.ts[i], ranges.dur[i]) for i in rows), window)
    step_names = {i for i, name in enumerate(names) if name.startswith(STEP_PREFIX)}
    threads = {ranges.thread[i] for i in ranges.rows_named(step_names)}
    compute_names = {i for i, name in enumerate(names) if name.startswith(COMPUTE_PREFIX)}
    compute = _clipped(_ops_on(events, threads, compute_names), window)
    comm_union = union_of(comm[0], comm[1])
    compute_union = union_of(compute[0], compute[1])
    overlap = sum(
        compute_union.covered(start, end)
        for start, end in zip(comm_union.starts, comm_union.ends, strict=True)
    )
    gaps = list(_gaps(comm_union, compute_union))
    exposed = union_of([start for start, _ in gaps], [end - start for start, end in gaps])
    by_phase: dict[str, float] = {}
    phases = {
        i: name[len(PHASE_PREFIX) :]
        for i, name in enumerate(names)
        if name.startswith(PHASE_PREFIX)
    }
    for i in ranges.rows_named(set(phases)):
        if ranges.thread[i] in threads:
            lo = max(ranges.ts[i], window.start)
            hi = min(ranges.ts[i] + max(ranges.dur[i], 0.0), window.end)
            phase = phases[ranges.name[i]]
            by_phase[phase] = by_phase.get(phase, 0.0) + exposed.covered(lo, hi)
    return HostComm(comm_union.total, overlap, by_phase)


def _gaps(comm: Union, compute: Union) -> Iterator[tuple[float, float]]:
    """The parts of `comm`'s intervals that `compute` does not cover, in order."""
    c_starts, c_ends = compute.starts, compute.ends
    for start, end in zip(comm.starts, comm.ends, strict=True):
        at = bisect_right(c_ends, start)  # the first compute interval ending after start
        cursor = start
        while at < len(c_starts) and c_starts[at] < end:
            if c_starts[at] > cursor:
                yield cursor, c_starts[at]
            cursor = max(cursor, c_ends[at])
            at += 1
        if cursor < end:
            yield cursor, end


def _ops_on(
    events: TraceEvents, threads: set[int], wanted: set[int]
) -> Iterator[tuple[float, float]]:
    blocks: Iterator[Columns] = events.spool.blocks() if events.spool else iter([events.ops])
    for ops in blocks:  # a spooled block has no `present` set: every name is looked at
        names, on = ops.name, ops.thread
        for i in compress(range(len(names)), map(wanted.__contains__, names)):
            if on[i] in threads:
                yield ops.ts[i], ops.dur[i]


def _clipped(
    spans: Iterator[tuple[float, float]], window: StepWindow
) -> tuple[array[float], array[float]]:
    starts, durations = array("d"), array("d")
    for start, duration in spans:
        lo, hi = max(start, window.start), min(start + max(duration, 0.0), window.end)
        if hi > lo:
            starts.append(lo)
            durations.append(hi - lo)
    return starts, durations
