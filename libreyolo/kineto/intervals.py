"""Time arithmetic: interval unions, clipped coverage, and the one rounding of results.

Role: turn overlapping GPU activity intervals (several streams, kernels and copies) into a sorted,
disjoint union that answers "how much of [lo, hi) is covered" in O(log n), so busy time is a union
and never a sum. Trace times are µs; results leave the package in ms, rounded once, by `to_ms`.
Must not: know event names, read files, print, or import torch/numpy.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, islice
from operator import le, sub

# 4 decimals of a ms (0.1 µs): finer than any difference a reader acts on, and coarse enough
# that documents do not change with float summation order.
MS_DECIMALS = 4
US_DECIMALS = 3  # the same resolution for values kept in µs


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
