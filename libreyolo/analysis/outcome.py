"""What `run` and `infer` print when they finish: the profile's path, headline and verdict. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from libreyolo.analysis.result_kind import ResultKind
from libreyolo.document.json_value import JsonObject
from libreyolo.document.mode import Mode
from libreyolo.document.model import Profile, Scalar


@dataclass(frozen=True, slots=True)
class MeasurementOutcome:
    result_kind: ClassVar[ResultKind] = ResultKind.OUTCOME
    mode: Mode
    profile_path: str
    trace_path: str | None
    metrics: dict[str, Scalar]
    bound: str
    why: str
    img_per_s_std: float | None
    num_trials: int
    notes: tuple[str, ...]  # what the run noted about itself (`Profile.notes`)
    trace_notes: tuple[str, ...]  # the trace analyser's caveats (`TraceAnalysis.notes`)
    quiet_bound: str | None = None  # a contended run: what a quiet host's numbers would say
    quiet_why: str | None = None
    program: str = "libreyolo"  # as the user started it, for the `next:` commands


def outcome(
    profile: Profile, profile_path: str, trace_path: str | None, program: str = "libreyolo"
) -> MeasurementOutcome:
    """The closing summary of a measurement that wrote `profile_path`, started as `program`."""
    verdict = profile.verdict
    std = profile.metrics.get("img_per_s_std")
    return MeasurementOutcome(
        mode=profile.kind,
        profile_path=profile_path,
        trace_path=trace_path,
        metrics=dict(profile.metrics),
        bound=verdict.bound if verdict else str(profile.metrics.get("bound")),
        why=verdict.why if verdict else "",
        img_per_s_std=float(std) if isinstance(std, int | float) else None,
        num_trials=max(len(profile.trials), 1),
        notes=tuple(profile.notes),
        trace_notes=tuple(profile.trace.notes if profile.trace else ()),
        quiet_bound=verdict.quiet_bound if verdict else None,
        quiet_why=verdict.quiet_why if verdict else None,
        program=program,
    )


@dataclass(frozen=True, slots=True)
class ConfigView:
    """The composed config that `--print-config` shows instead of measuring."""

    result_kind: ClassVar[ResultKind] = ResultKind.CONFIG
    config: JsonObject
    yaml_text: str
