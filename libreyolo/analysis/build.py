"""Assemble complete Profile documents: derive the metric map and verdict from measurements.

Pure: the caller passes the clock reading and version; nothing here reads files or the clock.
"""

from __future__ import annotations

import msgspec.structs

from libreyolo.analysis.efficiency import KEYS as EFFICIENCY_KEYS
from libreyolo.analysis.execution import KEYS as EXECUTION_KEYS
from libreyolo.analysis.execution import execution_metrics
from libreyolo.analysis.metrics import COMM_KEYS, compute_metrics
from libreyolo.analysis.trainer_levers import for_trainer
from libreyolo.analysis.variant_levers import variant_levers
from libreyolo.analysis.verdict import decide
from libreyolo.analysis.world import KEYS as WORLD_KEYS
from libreyolo.analysis.world import world_metrics, world_verdict
from libreyolo.document.mode import Mode
from libreyolo.document.model import Artifacts, Profile, RunInfo, Scalar, Tool, TraceAnalysis
from libreyolo.document.phases import TRAINING_ONLY

# Keys added to the metric map after files were written: an older file reads them as null.
NEWER_KEYS = EFFICIENCY_KEYS + EXECUTION_KEYS + COMM_KEYS + WORLD_KEYS


def finalize(profile: Profile) -> Profile:
    """`profile` with its metric map and verdict derived from its samples and trace."""
    provisional = compute_metrics(profile, bound="")
    # A multi-process run's world profile has the world's keys; any other, each of them null.
    world = profile.world
    if world is None:
        provisional |= dict.fromkeys(WORLD_KEYS)
    else:  # every rank measured the same window
        provisional |= world_metrics(world, measured_steps=len(profile.samples.steps))
    verdict = world_verdict(profile, provisional, decide(profile, provisional))
    if profile.run.trainer is not None:  # what to change is libreyolo 1.x's `train` words
        verdict = for_trainer(verdict)
    measured = variant_levers(profile, provisional)
    if measured:  # measured savings first: they outrank the bound's generic levers
        verdict = msgspec.structs.replace(verdict, levers=[*measured, *verdict.levers])
    metrics = provisional | {"bound": verdict.bound}
    return msgspec.structs.replace(profile, metrics=metrics, verdict=verdict)


def read_older(profile: Profile) -> Profile:
    """A profile from a file that predates the current metric map (a migrated v1 file, a v2
    file written before the efficiency or execution keys), as the readers see it: every
    efficiency key present and null (unknown: `get mfu` prints `null`, never "unknown
    metric"), the execution keys derived from its `execution` record (null without one), and a
    migrated v1 CPU verdict re-decided. The file is never rewritten."""
    if any(key not in profile.metrics for key in NEWER_KEYS):
        derived = execution_metrics(profile.execution)
        metrics = {key: value for key, value in derived.items() if key not in profile.metrics}
        metrics = with_efficiency_keys(profile.metrics | metrics)
        profile = msgspec.structs.replace(profile, metrics=metrics)
    return refresh_legacy_verdict(profile)


def with_efficiency_keys(metrics: dict[str, Scalar]) -> dict[str, Scalar]:
    """`metrics` with every efficiency, execution and world key it lacks added as null
    (unknown, or for the world's keys: not a multi-process run)."""
    return metrics | {key: None for key in NEWER_KEYS if key not in metrics}


def refresh_legacy_verdict(profile: Profile) -> Profile:
    """Re-decide the verdict of a migrated v1 CPU profile, which 1.6.0 mislabelled.

    libreyolo 1.6.0 called every CPU training run `host / launch` (no kernels means 0 % GPU
    busy). Its metric values stay; only the conclusion is redrawn, and v1's label stays in
    `legacy_v1.bound`.
    """
    has_gpu = profile.trace is not None and profile.trace.has_gpu
    if profile.legacy_v1 is None or has_gpu or profile.metrics.get("bound") != "host / launch":
        return profile
    verdict = decide(profile, dict(profile.metrics))
    metrics = dict(profile.metrics) | {"bound": verdict.bound}
    return msgspec.structs.replace(profile, metrics=metrics, verdict=verdict)


def mode_of_trace(trace: TraceAnalysis) -> Mode:
    """A trace with training phases (backward, optimizer, ...) is training; else inference."""
    names = {phase.name for phase in trace.phases}
    return Mode.TRAIN if names & TRAINING_ONLY else Mode.INFER


def profile_from_trace(
    trace: TraceAnalysis, *, trace_path: str | None, created: str | None, version: str
) -> Profile:
    """A profile for a bare Chrome trace: no collector samples, so timing comes from the trace."""
    mode = mode_of_trace(trace)
    profile = Profile(
        kind=mode,
        created=created,
        tool=Tool(version=version),
        run=RunInfo(mode=mode.noun),
        trace=trace,
        artifacts=Artifacts(trace=trace_path),
    )
    return finalize(profile)
