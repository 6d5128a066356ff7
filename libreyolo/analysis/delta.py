"""A number before and after: its relative change, or, for a share, its move in points.

Pure: two scalars in, a change out; `compare` and its views read them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from libreyolo.document.model import Scalar

# A share (a fraction 0..1: GPU util, CPU wait) is compared as a difference in percentage
# points, never as a ratio: near zero a ratio magnifies noise (CPU wait 0.1 % -> 0.9 % would
# read "+800 %"). A move under this many points is not called better or worse: it is a tenth of
# the contended CPU-wait share (contention.CPU_WAIT_FRAC_CONTENDED, 20 %), small against the
# up to 5 % CPU wait a quiet 2-core host shows on its own, and about the run-to-run spread of
# GPU util between repeats of one configuration.
SHARE_NOISE_POINTS = 2.0


@dataclass(frozen=True, slots=True)
class Delta:
    before: Scalar
    after: Scalar

    @property
    def change(self) -> float | None:
        """Relative change (after − before) / before, or None when not computable."""
        a, b = self.before, self.after
        if isinstance(a, bool) or isinstance(b, bool):
            return None
        if isinstance(a, int | float) and isinstance(b, int | float) and a:
            change = (b - a) / a
            return change if math.isfinite(change) else None  # a mean that overflowed
        return None


@dataclass(frozen=True, slots=True)
class ShareDelta:
    """A share (a fraction 0..1) before and after, compared in percentage points."""

    before: Scalar
    after: Scalar

    @property
    def change(self) -> None:
        """No relative change: a ratio of two shares says nothing (see `change_points`)."""
        return None

    @property
    def change_points(self) -> float | None:
        """(after − before) × 100, in percentage points; None when a side is not a number."""
        a, b = self.before, self.after
        if isinstance(a, bool) or isinstance(b, bool):
            return None
        if isinstance(a, int | float) and isinstance(b, int | float):
            points = (b - a) * 100
            return round(points, 4) if math.isfinite(points) else None
        return None

    @property
    def moved(self) -> bool | None:
        """Whether the share moved by at least SHARE_NOISE_POINTS; None without both sides."""
        points = self.change_points
        return None if points is None else abs(points) >= SHARE_NOISE_POINTS
