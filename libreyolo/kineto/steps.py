"""The measured window: CPU-side `ProfilerStep#N` ranges, or the whole trace when there are none.

Role: find the steps (only CPU-side copies: `gpu_user_annotation` events are never read, so the
H100 fixture's duplicate `ProfilerStep#6` counts once), place any timestamp in its step, and build
the per-step rows of the document. All steps are used (no fixed 2..8 window). Must not: read
files, print, or import torch/numpy.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from operator import add
from typing import Literal

from libreyolo.document.model import TraceStep
from libreyolo.kineto.events import Columns, TraceEvents
from libreyolo.kineto.intervals import US_DECIMALS, Coverage, to_ms

STEP_PREFIX = "ProfilerStep#"


@dataclass(frozen=True, slots=True)
class StepRange:
    """One CPU-side ProfilerStep, in trace µs."""

    number: int
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class StepWindow:
    """The analysed window [start, end) and the steps inside it (none: the whole trace)."""

    start: float
    end: float
    steps: list[StepRange]
    _starts: list[float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_starts", [step.start for step in self.steps])

    @property
    def source(self) -> Literal["profiler_steps", "whole_trace"]:
        return "profiler_steps" if self.steps else "whole_trace"

    def contains(self, time: float) -> bool:
        return self.start <= time < self.end

    def step_of(self, time: float) -> int:
        """Position in `steps` of the step whose range holds `time`, or -1."""
        position = bisect_right(self._starts, time) - 1
        if position >= 0 and time < self.steps[position].end:
            return position
        return -1


def find_steps(events: TraceEvents) -> list[StepRange]:
    """CPU-side `ProfilerStep#N` ranges (user annotations or cpu_ops), in start order."""
    step_names = {i for i, name in enumerate(events.names) if name.startswith(STEP_PREFIX)}
    found: list[tuple[float, float, str]] = []
    if step_names:
        for columns in (events.ranges, events.ops):
            found.extend(_ranges_named(columns, step_names, events.names))
    found.sort()
    return [
        StepRange(_step_number(name, position), start, end)
        for position, (start, end, name) in enumerate(found)
    ]


def _ranges_named(
    columns: Columns, wanted: set[int], names: list[str]
) -> list[tuple[float, float, str]]:
    return [
        (columns.ts[i], columns.ts[i] + columns.dur[i], names[columns.name[i]])
        for i in columns.rows_named(wanted)
    ]


def _step_number(name: str, position: int) -> int:
    suffix = name[len(STEP_PREFIX) :]
    return int(suffix) if suffix.isdigit() else position


def measured_window(events: TraceEvents, steps: list[StepRange]) -> StepWindow:
    """First step start to last step end; without steps, first start to last end of every
    complete event kept (CPU ops, annotations, runtime calls, GPU activity; the spooled ones
    read back from their spools)."""
    if steps:
        return StepWindow(steps[0].start, max(step.end for step in steps), steps)
    ops = [events.ops] if events.spool is None else []  # spooled: bounds from the spool
    kept = [c for c in (*ops, events.ranges, events.calls, events.gpu) if len(c)]
    starts = [min(columns.ts) for columns in kept]
    ends = [max(map(add, columns.ts, columns.dur)) for columns in kept]
    for spool in (events.spool, events.call_spool):
        if spool is not None and spool.count:
            start, end = spool.bounds()
            starts.append(start)
            ends.append(end)
    return StepWindow(min(starts), max(ends), [])


@dataclass(slots=True)
class StepCounts:
    """Per-step tallies gathered while the calls and GPU activity are reduced."""

    gpu_end: list[float]  # end of the last GPU activity launched in the step
    kernels: list[int]
    launches: list[int]
    mallocs: list[int]

    @classmethod
    def empty(cls, window: StepWindow) -> StepCounts:
        count = len(window.steps)
        return cls([step.end for step in window.steps], [0] * count, [0] * count, [0] * count)


def step_spans(window: StepWindow, counts: StepCounts) -> list[tuple[float, float]]:
    """Per step its device-side span: from its start to the end of the last GPU work it
    launched, never before its CPU end."""
    return [
        (step.start, max(step.end, counts.gpu_end[position]))
        for position, step in enumerate(window.steps)
    ]


def trace_steps(window: StepWindow, counts: StepCounts, busy: Coverage | None) -> list[TraceStep]:
    """Document rows: CPU span, device-side span (`step_spans`) and the busy time inside it.

    `gpu_busy_ms / gpu_span_ms` is the step's utilisation even when the GPU runs a step behind
    the CPU (the V100 fixture). `busy` must cover every step span.
    """
    rows = []
    for position, (step, (start, span_end)) in enumerate(
        zip(window.steps, step_spans(window, counts), strict=True)
    ):
        rows.append(
            TraceStep(
                index=step.number,
                start_us=round(start, US_DECIMALS),
                cpu_ms=to_ms(step.end - start),
                gpu_span_ms=to_ms(span_end - start) if busy else None,
                gpu_busy_ms=to_ms(busy.covered(start, span_end)) if busy else 0.0,
                num_kernels=counts.kernels[position],
                num_launches=counts.launches[position],
                num_mallocs=counts.mallocs[position],
            )
        )
    return rows
