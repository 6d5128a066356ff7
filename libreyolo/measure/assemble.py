"""The end of every measurement: the recorded trace analysed into the run's set, then the
profile assembled, finalized (metrics, verdict) and committed with it.

Shared by the inference and training collectors, which differ only in their samples and
settings. Must not time anything, nor decide what a run measured.
"""

from __future__ import annotations

from pathlib import Path

import torch

from libreyolo import __version__
from libreyolo.analysis.build import finalize
from libreyolo.document.files import save
from libreyolo.document.model import (
    Artifacts,
    Kind,
    Profile,
    RunInfo,
    Samples,
    Tool,
    TraceAnalysis,
)
from libreyolo.errors import AnalysisError
from libreyolo.measure.artifacts import PROFILE_NAME, TRACE_NAME, StagedRun, utc_now
from libreyolo.measure.environment import collect_environment
from libreyolo.measure.memory import with_device_memory
from libreyolo.measure.phases import attach_phase_walls
from libreyolo.measure.window import TraceRecorder, WindowPlan


def analysed_trace(
    recorder: TraceRecorder,
    run: StagedRun,
    phase_walls: dict[str, list[float]],
    device: torch.device,
    notes: list[str],
) -> TraceAnalysis | None:
    """The recorder's trace, exported into `run` and analysed, with the synced phase walls and
    the device's memory peaks attached; None (and a note) when there is none or it cannot be
    analysed, in which case no trace file stays in the set."""
    path = run.path(TRACE_NAME)
    trace = None
    if recorder.export(path):
        try:
            from libreyolo.kineto import analyse_trace

            trace = analyse_trace(path)
        except AnalysisError as err:
            notes.append(f"trace not analysed: {err.message}")
    notes.extend(recorder.notes)
    if trace is None:
        path.unlink(missing_ok=True)
        return None
    return with_device_memory(attach_phase_walls(trace, phase_walls, notes), device)


def commit_profile(
    run: StagedRun,
    *,
    kind: Kind,
    info: RunInfo,
    device: torch.device,
    plan: WindowPlan,
    samples: Samples,
    trace: TraceAnalysis | None,
) -> tuple[Profile, Path]:
    """Assemble and finalize the profile, save it into `run` and swap the set into place."""
    profile = finalize(
        Profile(
            kind=kind,
            created=utc_now(),
            tool=Tool(version=__version__),
            run=info,
            environment=collect_environment(device),
            window=plan.document(),
            samples=samples,
            trace=trace,
            artifacts=Artifacts(trace=TRACE_NAME if trace is not None else None),
        )
    )
    save(profile, run.path(PROFILE_NAME))
    run.commit()
    return profile, run.final(PROFILE_NAME)
