"""A speed-up the run did not use is named as a lever with its measured saving: the part it
changes, timed both ways after the window, against the measured step."""

from __future__ import annotations

import msgspec.structs
import pytest

from libreyolo.analysis.build import finalize
from libreyolo.analysis.variant_levers import variant_levers
from libreyolo.analysis.whatif import project
from libreyolo.document.model import VariantTrial
from libreyolo.errors import UnknownNameError, UsageError
from tests.profiles import training_profile

PART = "the loss, forward and backward, over 300 target rows per image"


def _trial(as_run_ms: float, variant_ms: float) -> VariantTrial:
    return VariantTrial(
        variant="trimmed_targets",
        part=PART,
        as_run_ms=as_run_ms,
        variant_ms=variant_ms,
        repeats=3,
    )


def test_the_saving_is_the_part_as_run_less_with_the_variant() -> None:
    profile = msgspec.structs.replace(training_profile("cpu"), variant_trials=[_trial(1200, 100)])
    assert variant_levers(profile, {"step_ms": 2300.0}) == [
        f"{PART} takes 1.20 s of a 2.30 s step, 100 ms with --variant trimmed_targets: 1.92x faster"
    ]


@pytest.mark.parametrize(
    ("as_run_ms", "variant_ms", "step_ms"),
    [
        (100, 99, 2300.0),  # 1.0004x: inside a step's noise
        (100, 120, 2300.0),  # the variant is slower
        (3000, 100, 2300.0),  # a saving larger than the step: not a measurement to trust
    ],
)
def test_no_lever_where_the_numbers_cannot_support_one(
    as_run_ms: float, variant_ms: float, step_ms: float
) -> None:
    profile = msgspec.structs.replace(
        training_profile("cpu"), variant_trials=[_trial(as_run_ms, variant_ms)]
    )
    assert variant_levers(profile, {"step_ms": step_ms}) == []
    assert variant_levers(profile, {"step_ms": None}) == []


def test_the_verdict_names_the_measured_lever_first() -> None:
    base = training_profile("cpu")
    step_ms = base.metrics["step_ms"]
    assert isinstance(step_ms, float)
    trial = _trial(step_ms / 2, step_ms / 10)  # saves 40 % of the step
    profile = finalize(msgspec.structs.replace(base, variant_trials=[trial]))
    assert profile.verdict is not None and base.verdict is not None
    assert profile.verdict.levers[0].endswith("--variant trimmed_targets: 1.67x faster")
    assert profile.verdict.levers[1:] == base.verdict.levers


def test_what_if_with_a_variant_is_the_step_less_its_measured_saving() -> None:
    base = training_profile("cpu")
    step_ms = base.metrics["step_ms"]
    assert isinstance(step_ms, float) and isinstance(base.run.batch, int)
    profile = msgspec.structs.replace(base, variant_trials=[_trial(step_ms / 2, step_ms / 10)])
    result = project(profile, variant="trimmed_targets")
    assert result.regime == "measured"
    assert result.projected_step_ms == round(step_ms * 0.6, 1)
    assert result.projected_img_per_s == round(base.run.batch * 1000 / (step_ms * 0.6), 1)
    assert result.mechanism.startswith(f"measured: {PART} took")
    assert "--variant trimmed_targets" in result.caveat


def test_what_if_refuses_a_variant_without_a_trial_and_a_mixed_question() -> None:
    with pytest.raises(
        UnknownNameError, match=r"no trial of variant 'trimmed_targets' \(trials: none\)"
    ):
        project(training_profile("cpu"), variant="trimmed_targets")
    with pytest.raises(UsageError, match="give it alone"):
        project(training_profile("cpu"), variant="trimmed_targets", launches=3)
