"""Interval unions: merging, clipped coverage, and never more than the window."""

from __future__ import annotations

from array import array
from heapq import merge

import pytest
from hypothesis import given
from hypothesis import strategies as st

from libreyolo.kineto import intervals as intervals_module
from libreyolo.kineto.intervals import Coverage, sorted_runs, start_order, to_ms, union_of


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


@given(
    st.lists(st.tuples(st.floats(0, 1000), st.floats(-10, 100)), max_size=60),
    st.lists(st.tuples(st.floats(-10, 1100), st.floats(-10, 1100)), min_size=1, max_size=8),
    st.integers(1, 4),
)
def test_coverage_in_a_stream_equals_the_kept_union(
    intervals: list[tuple[float, float]], spans: list[tuple[float, float]], run: int
) -> None:
    starts = array("d", [start for start, _ in intervals])
    durations = [duration for _, duration in intervals]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(intervals_module, "SORT_RUN", run)  # runs of a few: the merge path
        order = list(start_order(starts))
        coverage = Coverage(spans)
        for i in order:
            coverage.add(starts[i], starts[i] + max(durations[i], 0.0))
    assert sorted(order) == list(range(len(starts)))
    assert [starts[i] for i in order] == sorted(starts)
    union = union_of(starts, durations)
    coverage.finish()
    assert [coverage.covered(lo, hi) for lo, hi in spans] == [
        union.covered(lo, hi) for lo, hi in spans
    ]  # the same floats, not approximately


def test_sorted_runs_merge_to_the_sorted_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intervals_module, "SORT_RUN", 2)
    values = array("q", [5, -1, 9, 3, 3, 0, 7])
    runs = sorted_runs(values)
    assert [run.tolist() for run in runs] == [[-1, 5], [3, 9], [0, 3], [7]]
    assert list(merge(*runs)) == sorted(values)
    assert sorted_runs(array("d")) == [array("d")]
