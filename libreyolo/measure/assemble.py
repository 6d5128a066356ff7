"""The end of every measurement: the recorded trace analysed into the run's set, then the
profile assembled, finalized (metrics, verdict) and committed with it.

Shared by the inference and training collectors, which differ only in their samples and
settings, and by `from_config.measure_config`, which measures its trials into one set it
commits itself. Each file of a set has one writer, `commit_set`: every document is complete
(config included) before its one save, and the set is committed once. Must not time anything,
nor decide what a run measured.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import torch

from libreyolo import __version__
from libreyolo.analysis.build import finalize
from libreyolo.document.files import save
from libreyolo.document.mode import Mode
from libreyolo.document.model import (
    Artifacts,
    Compute,
    Environment,
    Execution,
    Host,
    HostMemory,
    Memory,
    Profile,
    RunInfo,
    Samples,
    TensorMemory,
    Tool,
    TraceAnalysis,
    VariantTrial,
)
from libreyolo.errors import AnalysisError
from libreyolo.measure.artifacts import PROFILE_NAME, TRACE_NAME, StagedRun, utc_now
from libreyolo.measure.environment import collect_environment
from libreyolo.measure.failures import destination_error
from libreyolo.measure.phases import attach_phase_walls
from libreyolo.measure.trace_name import rename_trace
from libreyolo.measure.window import TraceRecorder, WindowPlan


def analysed_trace(
    recorder: TraceRecorder,
    run: StagedRun,
    phase_walls: dict[str, list[float]],
    device: torch.device,
    notes: list[str],
    merge: Callable[[Path], None] | None = None,
) -> TraceAnalysis | None:
    """The recorder's trace, exported into `run` and analysed, with the synced phase walls
    attached; None (and a note) when there is none or it cannot be analysed, in which case no
    trace file stays in the set. What this says about recording the trace goes into `notes`,
    the run's own list (`assemble_profile`): the trace keeps only its analyser's caveats.
    `merge` adds events to the exported trace before it is analysed (ORT's nodes)."""
    path = run.path(TRACE_NAME)
    exported = recorder.export(path)
    if exported and merge is not None:
        merge(path)
    return analyse_exported(
        path if exported else None,
        run,
        phase_walls,
        device.type,
        notes,
        recorder_notes=recorder.notes,
        kineto_errors=recorder.kineto_errors,
    )


def analyse_exported(
    path: Path | None,
    run: StagedRun,
    phase_walls: dict[str, list[float]],
    device_type: str,
    notes: list[str],
    *,
    recorder_notes: Sequence[str] = (),
    kineto_errors: Sequence[str] = (),
) -> TraceAnalysis | None:
    """`analysed_trace` for a trace already exported to `path` (by this process or another:
    the trainer probe's); None (and a note) without one."""
    trace = None
    if path is not None:
        rename_trace(path, run.final(TRACE_NAME))
        try:
            from libreyolo.kineto import analyse_trace

            trace = analyse_trace(path)
        except AnalysisError as err:
            # the recording stays: `summary <trace>` analyses it once the cause is gone
            why = f"{err.message} ({err.hint})" if err.hint else err.message
            notes.append(f"trace not analysed: {why}; the recorded trace is kept as {TRACE_NAME}")
            warnings.warn(notes[-1], UserWarning, stacklevel=2)
    notes.extend(recorder_notes)
    note = no_gpu_activity_note(device_type, trace, kineto_errors)
    if note is not None:
        notes.append(note)
        if kineto_errors:  # the reason, said now: the profile alone would bury it
            warnings.warn(note, UserWarning, stacklevel=3)
    if trace is None:
        return None
    return attach_phase_walls(trace, phase_walls)


def no_gpu_activity_note(
    device_type: str, trace: TraceAnalysis | None, kineto_errors: Sequence[str] = ()
) -> str | None:
    """The one-line note of a CUDA run whose trace holds no GPU activity (none recorded,
    `--no-trace`, or CUPTI recorded nothing), with libkineto's first error as the likely
    reason; None on CPU or when the trace saw the GPU."""
    if device_type != "cuda" or (trace is not None and trace.has_gpu):
        return None
    if kineto_errors:
        return (
            f"no GPU activity was recorded (libkineto: {kineto_errors[0]}): GPU time, kernels "
            "and the bottleneck are unknown; check that CUPTI can record on this machine"
        )
    return (
        "no GPU activity was recorded: GPU time, kernels and the bottleneck are unknown; "
        "run with the trace on, or check that CUPTI can record on this machine"
    )


def staged(target: Path, into: StagedRun | None) -> AbstractContextManager[StagedRun]:
    """The run's set: the caller's `into` (it commits), or a new one at `target`."""
    return contextlib.nullcontext(into) if into is not None else StagedRun(target)


def assemble_profile(
    *,
    kind: Mode,
    info: RunInfo,
    device: torch.device,
    plan: WindowPlan,
    samples: Samples,
    trace: TraceAnalysis | None,
    host: Host | None,
    device_memory: Memory | None,
    host_memory: HostMemory | None,
    compute: Compute | None,
    notes: Sequence[str],
    execution: Execution | None = None,
    environment: Environment | None = None,
    variant_trials: Sequence[VariantTrial] = (),
    trace_kept: bool = False,
    tensor_memory: TensorMemory | None = None,
) -> Profile:
    """The finalized profile (metrics, verdict) of one measurement; `device_memory` is the
    allocator's record of the window (`measure.memory.device_memory`), kept with or without a
    trace, `host_memory` the process's peak RSS over it (`loop.run_window`), `compute` the FLOPs,
    peaks and energy (`measure.compute`), `execution` how the model ran (`measure.exec_mode`);
    `notes` is
    everything the run noted about itself, in the order it was noted (the profile's one list
    of them, shown by every reader with or without a trace). `environment`: where another
    process measured (the trainer probe's report); None: this process's. `variant_trials`:
    the speed-ups the run did not use, timed after the window (`measure.variant_trials`).
    `trace_kept`: the set holds the recorded trace although it was not analysed.
    `tensor_memory`: a training step's tensors by category (`measure.tensor_memory`)."""
    return finalize(
        Profile(
            kind=kind,
            created=utc_now(),
            tool=Tool(version=__version__),
            run=info,
            environment=environment or collect_environment(device),
            window=plan.document(),
            samples=samples,
            host=host,
            trace=trace,
            device_memory=device_memory,
            host_memory=host_memory,
            tensor_memory=tensor_memory,
            compute=compute,
            execution=execution,
            notes=list(notes),
            variant_trials=list(variant_trials),
            artifacts=Artifacts(trace=TRACE_NAME if trace is not None or trace_kept else None),
        )
    )


def conclude(run: StagedRun, profile: Profile, *, commit: bool) -> Path:
    """Where the collector's profile lies: saved and committed now, or (not `commit`) once the
    caller that staged `run` commits it."""
    if commit:
        commit_set(run, {PROFILE_NAME: profile})
    return run.final(PROFILE_NAME)


def commit_set(run: StagedRun, documents: dict[str, Profile]) -> None:
    """The one save of each document into `run`, then the one swap of the whole set."""
    for name, document in documents.items():
        try:
            save(document, run.path(name))
        except OSError as err:
            raise destination_error(err, run.final(name)) from err
    run.commit()
