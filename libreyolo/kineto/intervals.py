"""Time arithmetic: interval unions, clipped coverage, and the one rounding of results.

Role: turn overlapping GPU activity intervals (several streams, kernels and copies) into a sorted,
disjoint union that answers "how much of [lo, hi) is covered" in O(log n), so busy time is a union
and never a sum. Trace times are µs; results leave the package in ms, rounded once, by `to_ms`.
Must not: know event names, read files, print, or import torch/numpy.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import sub

# 4 decimals of a ms (0.1 µs): finer than any difference a reader acts on, and coarse enough
# that documents do not change with float summation order.
MS_DECIMALS = 4
US_DECIMALS = 3  # the same resolution for values kept in µs


def to_ms(us: float) -> float:
    """A duration in trace µs as ms, rounded to MS_DECIMALS."""
    return round(us / 1000, MS_DECIMALS)


@dataclass(frozen=True, slots=True)
class Union:
    """A sorted union of disjoint intervals with prefix sums of their lengths."""

    starts: list[float]
    ends: list[float]
    before: list[float]  # before[i] = total length of intervals 0..i-1; one entry longer

    @property
    def total(self) -> float:
        """Length of the whole union."""
        return self.before[-1]

    def covered(self, lo: float, hi: float) -> float:
        """Length of the union inside [lo, hi)."""
        if hi <= lo:
            return 0.0
        first = bisect_right(self.ends, lo)  # first interval that ends after lo
        stop = bisect_left(self.starts, hi)  # intervals from here on start at or after hi
        if first >= stop:
            return 0.0
        length = self.before[stop] - self.before[first]
        length -= max(0.0, lo - self.starts[first])
        length -= max(0.0, self.ends[stop - 1] - hi)
        return length


def union_of(starts: Sequence[float], durations: Sequence[float]) -> Union:
    """Merge intervals [start, start + duration) into a sorted disjoint union.

    Touching or overlapping intervals merge; negative durations count as empty.
    """
    merged_starts: list[float] = []
    merged_ends: list[float] = []
    for index in sorted(range(len(starts)), key=starts.__getitem__):
        start = starts[index]
        end = start + max(durations[index], 0.0)
        if merged_ends and start <= merged_ends[-1]:
            if end > merged_ends[-1]:
                merged_ends[-1] = end
        else:
            merged_starts.append(start)
            merged_ends.append(end)
    lengths = map(sub, merged_ends, merged_starts)
    return Union(merged_starts, merged_ends, list(accumulate(lengths, initial=0.0)))
