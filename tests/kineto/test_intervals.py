"""Interval unions: merging, clipped coverage, and never more than the window."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from libreyolo.kineto.intervals import to_ms, union_of


def test_overlapping_and_touching_intervals_merge() -> None:
    union = union_of([10.0, 0.0, 5.0, 30.0, 20.0], [5.0, 6.0, 3.0, 1.0, 10.0])
    assert union.starts == [0.0, 10.0, 20.0] and union.ends == [8.0, 15.0, 31.0]
    assert union.total == 24.0


def test_coverage_is_clipped_to_the_window() -> None:
    union = union_of([0.0, 20.0], [10.0, 10.0])
    assert union.covered(5.0, 25.0) == 10.0
    assert union.covered(12.0, 18.0) == 0.0
    assert union.covered(-100.0, 100.0) == 20.0
    assert union.covered(25.0, 5.0) == 0.0


def test_empty_and_negative_durations_add_nothing() -> None:
    assert union_of([], []).covered(0.0, 10.0) == 0.0
    assert union_of([5.0], [-3.0]).total == 0.0


def test_ms_are_rounded_once_to_four_decimals() -> None:
    assert to_ms(1234.56789) == 1.2346


@given(
    st.lists(st.tuples(st.floats(0, 1000), st.floats(0, 100)), min_size=0, max_size=50),
    st.floats(0, 1000),
    st.floats(0, 1000),
)
def test_union_never_exceeds_the_window_or_the_sum(
    intervals: list[tuple[float, float]], low: float, high: float
) -> None:
    starts = [start for start, _ in intervals]
    durations = [duration for _, duration in intervals]
    union = union_of(starts, durations)
    covered = union.covered(low, high)
    assert 0.0 <= covered <= max(high - low, 0.0) + 1e-9
    assert union.total <= sum(durations) + 1e-6
    pieces = zip(union.starts, union.ends, strict=True)
    assert covered == pytest.approx(sum(max(0.0, min(e, high) - max(s, low)) for s, e in pieces))
