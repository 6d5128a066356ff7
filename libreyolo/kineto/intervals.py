"""Time arithmetic: interval unions, clipped coverage, and the one rounding of results.

Role: turn overlapping GPU activity intervals (several streams, kernels and copies) into a sorted,
disjoint union that answers "how much of [lo, hi) is covered", so busy time is a union and never
a sum. `Union` keeps the union (O(log n) a question); `Coverage` is fed the intervals in start
order and keeps only the answers to spans named up front, so a trace's millions of GPU
intervals cost no memory (`start_order` streams that order). Trace times are µs; results leave
the package in ms, rounded once, by `to_ms`. Must not: know event names, read files, print, or
import torch/numpy.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from heapq import merge
from itertools import accumulate, islice
from operator import le, sub
from typing import Any

# 4 decimals of a ms (0.1 µs): finer than any difference a reader acts on, and coarse enough
# that documents do not change with float summation order.
MS_DECIMALS = 4
US_DECIMALS = 3  # the same resolution for values kept in µs
# Indices sorted this many at a time and merged lazily: a start order without one Python int
# per interval alive at once (2.6 MB of them a run).
SORT_RUN = 1 << 16


def to_ms(us: float) -> float:
    """A duration in trace µs as ms, rounded to MS_DECIMALS."""
    return round(us / 1000, MS_DECIMALS)


@dataclass(frozen=True, slots=True)
class Union:
    """A sorted union of disjoint intervals with prefix sums of their lengths (typed arrays: a
    GPU trace's union has about one interval per kernel)."""

    _starts: array[float]
    _ends: array[float]
    _before: array[float]  # _before[i] = total length of intervals 0..i-1; one entry longer

    @property
    def starts(self) -> list[float]:
        return self._starts.tolist()

    @property
    def ends(self) -> list[float]:
        return self._ends.tolist()

    @property
    def total(self) -> float:
        """Length of the whole union."""
        return self._before[-1]

    def covered(self, lo: float, hi: float) -> float:
        """Length of the union inside [lo, hi)."""
        if hi <= lo:
            return 0.0
        starts, ends = self._starts, self._ends
        first = bisect_right(ends, lo)  # first interval that ends after lo
        stop = bisect_left(starts, hi)  # intervals from here on start at or after hi
        if first >= stop:
            return 0.0
        length = self._before[stop] - self._before[first]
        length -= max(0.0, lo - starts[first])
        length -= max(0.0, ends[stop - 1] - hi)
        return length


def union_of(starts: Sequence[float], durations: Sequence[float]) -> Union:
    """Merge intervals [start, start + duration) into a sorted disjoint union.

    Touching or overlapping intervals merge; negative durations count as empty.
    """
    merged_starts = array("d")
    merged_ends = array("d")
    in_order = all(map(le, starts, islice(starts, 1, None)))  # GPU activity mostly is: no sort
    order = range(len(starts)) if in_order else sorted(range(len(starts)), key=starts.__getitem__)
    for index in order:
        start = starts[index]
        end = start + max(durations[index], 0.0)
        if merged_ends and start <= merged_ends[-1]:
            if end > merged_ends[-1]:
                merged_ends[-1] = end
        else:
            merged_starts.append(start)
            merged_ends.append(end)
    lengths = map(sub, merged_ends, merged_starts)
    return Union(merged_starts, merged_ends, array("d", accumulate(lengths, initial=0.0)))


def sorted_runs(values: array[Any]) -> list[array[Any]]:
    """`values` sorted in runs of SORT_RUN (arrays of its type), for `heapq.merge`: one run at
    a time is a list of Python objects."""
    return [
        array(values.typecode, sorted(values[low : low + SORT_RUN]))
        for low in range(0, len(values), SORT_RUN)
    ] or [array(values.typecode)]


def start_order(starts: Sequence[float]) -> Iterable[int]:
    """The indices of `starts` by start (ties in any order), streamed: sorted runs merged; a
    range when they are in order already."""
    size = len(starts)
    if all(map(le, starts, islice(starts, 1, None))):  # GPU activity mostly is: no sort
        return range(size)
    key = starts.__getitem__
    runs = [
        array("i", sorted(range(low, min(low + SORT_RUN, size)), key=key))
        for low in range(0, size, SORT_RUN)
    ]
    return runs[0] if len(runs) == 1 else merge(*runs, key=key)


class Coverage:
    """`union_of(...).covered(lo, hi)` for spans named up front, the union never kept.

    Fed intervals in start order (`add`), it merges them as `union_of` does and, as each merged
    interval opens and closes, notes what `Union.covered` reads for the span ends it passes:
    the same prefix sums in the same order, so the same floats. Call `finish` before `covered`.
    """

    def __init__(self, spans: Iterable[tuple[float, float]]) -> None:
        spans = list(spans)
        self._lows = sorted({lo for lo, _ in spans})
        self._highs = sorted({hi for _, hi in spans})
        self._next_low = self._next_high = 0
        # lo -> (first interval that ends after lo, length before it, its start)
        self._at_low: dict[float, tuple[int, float, float]] = {}
        # hi -> (first interval that starts at or after hi, length before it, previous end)
        self._at_high: dict[float, tuple[int, float, float]] = {}
        self._count = 0  # merged intervals closed
        self._before = 0.0  # their total length
        self._open = False
        self._start = self._end = 0.0  # the open interval

    def add(self, start: float, end: float) -> None:
        """Take [start, end) (end >= start), which starts no earlier than the last one."""
        if self._open and start <= self._end:
            if end > self._end:
                self._end = end
            return
        if self._open:
            self._close()
        highs, at = self._highs, self._next_high
        while at < len(highs) and highs[at] <= start:
            self._at_high[highs[at]] = (self._count, self._before, self._end)
            at += 1
        self._next_high = at
        self._start, self._end, self._open = start, end, True

    def _close(self) -> None:
        lows, at = self._lows, self._next_low
        while at < len(lows) and lows[at] < self._end:
            self._at_low[lows[at]] = (self._count, self._before, self._start)
            at += 1
        self._next_low = at
        self._before += self._end - self._start
        self._count += 1
        self._open = False

    def finish(self) -> Coverage:
        """Close the last interval; the span ends past every interval get the totals."""
        if self._open:
            self._close()
        for lo in self._lows[self._next_low :]:
            self._at_low[lo] = (self._count, self._before, 0.0)
        for hi in self._highs[self._next_high :]:
            self._at_high[hi] = (self._count, self._before, self._end)
        return self

    def covered(self, lo: float, hi: float) -> float:
        """Length of the union inside [lo, hi), a span named when this was made."""
        if hi <= lo:
            return 0.0
        first, before_first, first_start = self._at_low[lo]
        stop, before_stop, last_end = self._at_high[hi]
        if first >= stop:
            return 0.0
        length = before_stop - before_first
        length -= max(0.0, lo - first_start)
        length -= max(0.0, last_end - hi)
        return length
