"""`compare`'s tensor memory: a training step's tensor peak and categories before and after.

Its own module so that `summary` (which reads `analysis.tensor_memory`) does not import the
delta's dataclass machinery. Pure.
"""

from __future__ import annotations

import msgspec

from libreyolo.analysis.delta import Delta
from libreyolo.document.model import TENSOR_CATEGORIES, Profile


class TensorDeltas(msgspec.Struct, frozen=True):
    """compare's tensor memory: the peak and each category's MB before and after."""

    peak_mb: Delta
    categories: tuple[tuple[str, Delta], ...]  # TENSOR_CATEGORIES order; zero on both: left out


def tensor_deltas(before: Profile, after: Profile) -> TensorDeltas | None:
    """The tensor peak and categories from `before` to `after`; None when neither side has
    a tracked step (a side without one reads null)."""
    a, b = before.metrics, after.metrics
    if a.get("tensor_peak_mb") is None and b.get("tensor_peak_mb") is None:
        return None
    rows = []
    for name in TENSOR_CATEGORIES:
        key = f"tensor_{name}_mb"
        if a.get(key) or b.get(key):
            rows.append((name, Delta(a.get(key), b.get(key))))
    return TensorDeltas(Delta(a.get("tensor_peak_mb"), b.get("tensor_peak_mb")), tuple(rows))
