"""Small statistics over raw samples (stdlib only; never numpy).

`statistics` is imported inside the functions: it pulls in fractions and decimal, which a
reader that only prints a stored metric should not pay for at start-up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean, or None for no values."""
    import statistics

    return statistics.fmean(values) if values else None


def median(values: Sequence[float]) -> float | None:
    """Median, or None for no values."""
    import statistics

    return statistics.median(values) if values else None


def sample_sd(values: Sequence[float]) -> float | None:
    """Sample standard deviation (n - 1), or None below two values."""
    import statistics

    return statistics.stdev(values) if len(values) >= 2 else None


def combined_standard_error(a: Sequence[float], b: Sequence[float]) -> float | None:
    """sqrt(s_a²/n_a + s_b²/n_b) with sample SDs; None unless both sides hold ≥ 2 values."""
    sd_a, sd_b = sample_sd(a), sample_sd(b)
    if sd_a is None or sd_b is None:
        return None
    return math.sqrt(sd_a**2 / len(a) + sd_b**2 / len(b))


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest rank as libreyolo 1.6.0: the sorted list at min(n-1, round(q/100 × (n-1)))."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def iqr_share(values: Sequence[float]) -> float | None:
    """Interquartile range over the median (a noise measure); None below four values."""
    if len(values) < 4:
        return None
    import statistics

    q1, _, q3 = statistics.quantiles(values, n=4)
    mid = statistics.median(values)
    return (q3 - q1) / mid if mid > 0 else None
