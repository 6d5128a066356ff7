"""Events of one class as parallel typed arrays: the compact form every reduction step reads.

Role: hold ts, dur, interned name and thread ids, correlation ids and device numbers of one class
of events (ops, annotations, calls, GPU activity) in `array` columns, a few bytes an event and no
Python object per event. Must not: decode, interpret names, print, or import torch/numpy.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from itertools import compress


@dataclass(slots=True)
class Columns:
    """Events of one class as parallel arrays (µs times; ids index `TraceEvents` tables)."""

    ts: array[float] = field(default_factory=lambda: array("d"))
    dur: array[float] = field(default_factory=lambda: array("d"))
    # Ids and device numbers are small: int32 ("i") halves their memory against C long.
    name: array[int] = field(default_factory=lambda: array("i"))
    thread: array[int] = field(default_factory=lambda: array("i"))  # CPU events only
    corr: array[int] = field(default_factory=lambda: array("q"))  # calls and GPU activity
    device: array[int] = field(default_factory=lambda: array("i"))  # GPU activity only
    kind: array[int] = field(default_factory=lambda: array("b"))  # GPU: KERNEL/MEMCPY/MEMSET
    present: set[int] = field(default_factory=set)  # the name ids that occur

    def __len__(self) -> int:
        return len(self.ts)

    def rows_named(self, wanted: set[int]) -> list[int]:
        """Indices of the events whose name id is in `wanted` (no scan when none occurs)."""
        if self.present.isdisjoint(wanted):
            return []
        return list(compress(range(len(self.name)), map(wanted.__contains__, self.name)))
