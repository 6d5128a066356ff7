"""Properties of the pure analysis over generated profiles."""

from __future__ import annotations

import math

import msgspec.structs
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from libreyolo.analysis.build import finalize
from libreyolo.analysis.compare import compare
from libreyolo.analysis.kernels import top_kernels
from libreyolo.analysis.ops import top_ops
from libreyolo.analysis.stats import combined_standard_error, percentile
from libreyolo.analysis.whatif import project
from libreyolo.document.model import Profile, Samples
from tests.strategies import profiles

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)


@SETTINGS
@given(profiles())
def test_compare_with_itself_reports_no_change(profile: Profile) -> None:
    result = compare(finalize(profile), finalize(profile))
    for delta in (
        result.img_per_s,
        result.gpu_util,
        result.host_overhead_ms,
        result.launches_per_step,
        result.ms_per_image,
    ):
        assert delta.change in (None, 0.0)
    assert result.bound.before == result.bound.after
    assert result.significance.significant in (None, False)
    assert result.warnings == ()


@SETTINGS
@given(profiles(), profiles())
def test_compare_swapped_is_the_inverse(a: Profile, b: Profile) -> None:
    a, b = finalize(a), finalize(b)
    forward, backward = compare(a, b), compare(b, a)
    assert forward.img_per_s.before == backward.img_per_s.after
    assert forward.bound.after == backward.bound.before
    assert forward.significance.significant == backward.significance.significant
    assert len(forward.warnings) == len(backward.warnings)


@SETTINGS
@given(profiles(), st.integers(min_value=0, max_value=30))
def test_top_kernels_n_is_a_prefix_of_n_plus_one(profile: Profile, n: int) -> None:
    shorter = top_kernels(profile, top=n).rows
    longer = top_kernels(profile, top=n + 1).rows
    assert longer[: len(shorter)] == shorter


@SETTINGS
@given(profiles(), st.sampled_from(["time", "count", "name"]))
def test_kernel_shares_sum_to_at_most_one(profile: Profile, sort: str) -> None:
    rows = top_kernels(profile, top=10_000, sort=sort).rows  # type: ignore[arg-type]
    assert sum(row.share for row in rows) <= 1 + 1e-9


@SETTINGS
@given(profiles())
def test_op_shares_sum_to_at_most_one(profile: Profile) -> None:
    assert sum(row.share for row in top_ops(profile, top=10_000).rows) <= 1 + 1e-9


@SETTINGS
@given(profiles())
def test_what_if_removing_nothing_keeps_the_step(profile: Profile) -> None:
    assume(profile.trace is not None)
    trace = msgspec.structs.replace(
        profile.trace,
        has_gpu=True,
        gpu_busy_ms=0.0,
        phases=[p for p in profile.trace.phases if p.name != "dataload"],
    )
    profile = finalize(msgspec.structs.replace(profile, trace=trace, samples=Samples()))
    step = profile.metrics["step_ms"]
    assume(isinstance(step, float) and step > 0)
    assert project(profile, launches=0).projected_step_ms == round(step, 1)


@given(
    st.lists(st.floats(min_value=0, max_value=1e6), min_size=1, max_size=200),
    st.floats(min_value=0, max_value=100),
)
def test_percentile_is_one_of_the_samples(values: list[float], q: float) -> None:
    assert percentile(values, q) in values


def test_percentile_matches_v1_nearest_rank() -> None:
    values = [float(v) for v in range(1, 51)]  # 50 samples, as 1.6.0's defaults gave
    assert percentile(values, 50) == 25.0  # index round(24.5) == 24 (banker's rounding)
    assert percentile(values, 90) == 45.0
    assert percentile(values, 99) == 50.0


def test_combined_standard_error_uses_sample_sds() -> None:
    se = combined_standard_error([9.05, 6.01], [5.0, 5.5, 6.0])
    assert se is not None
    assert math.isclose(se, math.sqrt(2.14960461**2 / 2 + 0.5**2 / 3), rel_tol=1e-6)
    assert combined_standard_error([1.0], [1.0, 2.0]) is None
