"""The measurement loop of window.py's plan, written once for both collectors.

Role: run every iteration of a WindowPlan through the collector's step under one PhaseTimer:
warmup and the unsynced half with the profiler recording, the bare (overhead calibration)
iterations and the synced half without it; collect the raw samples. An unsynced iteration
carries exactly one device sync, at its end, so its wall time covers all the work it queued
and its CPU/GPU overlap stays intact; a synced one gets its syncs from the timer's phases.
The process's peak resident memory is reset as the first iteration after warmup begins and
read as the last one ends (rss.py): the window's own peak. A meter (energy.py's, on CUDA) is
started as the first unsynced iteration begins and stopped as the last one ends, so it spans
exactly the iterations that img/s is timed on.

Must not: know what an iteration does (the step does), build models or data, analyse the
trace, or print.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import torch

from libreyolo.document.model import Host, HostMemory, StepSample
from libreyolo.measure.device import synchronize
from libreyolo.measure.host import HostSampler, StepHost
from libreyolo.measure.oom_snapshot import AllocationHistory
from libreyolo.measure.phases import MS_DIGITS, PhaseTimer, ms
from libreyolo.measure.rss import WindowPeakRss
from libreyolo.measure.stages import Progress
from libreyolo.measure.window import TraceRecorder, WindowPlan

if TYPE_CHECKING:
    from libreyolo.config.schema import ExecConfig
    from libreyolo.document.model import Compiled, Memory
    from libreyolo.measure.energy import EnergyReading
    from libreyolo.measure.exec_mode import CompileWatch

# Runs iteration `i` inside the timer's phases. Returns the perf_counter time at which its input
# was in hand (training: the end of `next(batches)`, for the unsynced `dataload_ms`), or None.
IterationStep = Callable[[int, PhaseTimer], float | None]


class WindowMeter(Protocol):
    """Read at the two ends of the unsynced iterations (energy.py's `EnergyMeter`)."""

    def start(self) -> None: ...

    def stop(self) -> tuple[EnergyReading | None, str | None]:
        """The reading, or None and the note saying why there is none."""
        ...

    def close(self) -> None:
        """Release what `start` took (idempotent; also when `stop` never ran)."""
        ...


@dataclass
class WindowRecord:
    """The raw samples of one window, in iteration order."""

    phase_ms: dict[str, list[float]]  # per phase: its synced wall in each synced iteration
    steps: list[StepSample] = field(default_factory=list)  # every measured iteration
    bare_ms: list[float] = field(default_factory=list)  # unsynced walls with the profiler off
    host: Host | None = None  # what the measured iterations got from the CPUs
    host_memory: HostMemory | None = None  # this process's peak RSS after warmup; None: unknown
    energy: EnergyReading | None = None  # the meter's reading of the unsynced iterations
    notes: list[str] = field(default_factory=list)  # what the window noted (an unknown peak)

    @property
    def unsynced_wall_ms(self) -> list[float]:
        """The honest walls: inference's latency samples."""
        return [sample.wall_ms for sample in self.steps if not sample.synced]

    def add(self, sample: StepSample) -> None:
        self.steps.append(sample)
        if sample.synced:
            for name, walls in self.phase_ms.items():
                walls.append(sample.phase_ms.get(name, 0.0))


@dataclass(frozen=True)
class MeasuredWindow:
    """A collector's window: what it recorded and what ran around it."""

    window: WindowRecord
    recorder: TraceRecorder
    memory: Memory | None  # the allocator's, CUDA only
    watch: CompileWatch | None = None  # under --exec compile
    first_call_s: float = 0.0  # the compiling (or capturing) first call's wall seconds

    def compiled(self, exec_config: ExecConfig) -> Compiled | None:
        return None if self.watch is None else self.watch.compiled(exec_config, self.first_call_s)


def run_window(
    plan: WindowPlan,
    device: torch.device,
    step: IterationStep,
    recorder: TraceRecorder,
    on_progress: Progress | None,
    *,
    phases: Sequence[str],
    worker_pids: Callable[[], Sequence[int]] = tuple,
    meter: WindowMeter | None = None,
    history: AllocationHistory | None = None,
) -> WindowRecord:
    """Run all `plan.num_total` iterations of `step`; `phases` name the synced walls kept.

    `recorder` records the traced iterations and is closed on the way out, also on failure.
    Every measured iteration (not warmup, not bare) is host-sampled: the threads of this
    process and of the processes `worker_pids` names (the DataLoader's workers). `meter`
    spans the unsynced iterations; its note joins the window's, and it is closed on the way out.
    `history` records the CUDA allocator over the warmup only; an OOM there ends as its
    explained error (the snapshot written while the failed step's tensors are alive).
    """
    timer = PhaseTimer(device)
    record = WindowRecord(phase_ms={name: [] for name in phases})
    sampler = HostSampler(worker_pids=worker_pids, intra_op_threads=torch.get_num_threads)
    peak_rss = WindowPeakRss()
    after_sampled = False  # whether the previous iteration was host-sampled
    try:
        if history is not None:
            history.start()
        for iteration in range(plan.num_total):
            if iteration == plan.num_warmup:
                if history is not None:
                    history.stop()  # the measured steps pay for no stacks
                if meter is not None:  # first: NVML's library is not the window's memory or CPU
                    meter.start()
                peak_rss.start()  # what warmup (and anything before it) held is not the window's
            if iteration == plan.num_traced:
                recorder.close()  # the bare and synced iterations run without the profiler
            synced = plan.is_synced(iteration)
            measured = plan.is_measured(iteration)
            timer.begin(synced=synced)
            if measured:
                sampler.begin(after_sampled=after_sampled)
            start = time.perf_counter()
            input_at = step(iteration, timer)
            if not synced:
                synchronize(device)  # one sync at the end: the wall includes all queued work
            end = time.perf_counter()
            host = sampler.end() if measured else StepHost()
            after_sampled = measured
            if meter is not None and iteration == plan.num_traced - 1:  # the last unsynced one
                record.energy, note = meter.stop()
                record.notes += [note] if note else []
            if iteration < plan.num_traced:
                recorder.step()
            if plan.is_bare(iteration):
                record.bare_ms.append(ms(end - start))
            elif measured:
                index = plan.sample_index(iteration)
                record.add(_sample(index, synced, start, input_at, end, timer, host))
            if on_progress is not None:
                on_progress(*plan.progress(iteration))
        record.host_memory, note = peak_rss.end()
        record.notes += [note] if note else []
    except BaseException as err:
        explained = None if history is None else history.explained(err)
        if explained is not None:
            raise explained from err
        raise
    finally:
        if history is not None:
            history.stop()
        recorder.close()
        if meter is not None:
            meter.close()
        record.host = sampler.window()  # also closes its descriptors on failure
    return record


def _sample(
    index: int,
    synced: bool,
    start: float,
    input_at: float | None,
    end: float,
    timer: PhaseTimer,
    host: StepHost,
) -> StepSample:
    """One measured iteration: a synced one by its phase walls (its wall is their sum, the
    syncs between phases excluded), an unsynced one by its start-to-end wall; both with what
    the host sampler saw during it."""
    if synced:
        walls = timer.wall_ms()
        wall_ms, dataload_ms = round(sum(walls.values()), MS_DIGITS), None
    else:
        walls, wall_ms = {}, ms(end - start)
        dataload_ms = None if input_at is None else ms(input_at - start)
    return StepSample(
        index=index,
        synced=synced,
        wall_ms=wall_ms,
        dataload_ms=dataload_ms,
        phase_ms=walls,
        cpu_ms=host.cpu_ms,
        cpu_wait_ms=host.cpu_wait_ms,
        num_involuntary_switches=host.num_involuntary_switches,
    )
