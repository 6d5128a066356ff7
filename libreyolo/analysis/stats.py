"""Small statistics over raw samples (stdlib only; never numpy).

`statistics` is imported inside the functions: it pulls in fractions and decimal, which a
reader that only prints a stored metric should not pay for at start-up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def as_number(value: object) -> float | None:
    """`value` as a float when it is an int or float (a bool is not a number here), else None."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


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


def welch_df(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Welch–Satterthwaite degrees of freedom of the difference of two means.

    ν = (v_a + v_b)² / (v_a²/(n_a − 1) + v_b²/(n_b − 1)) with v = s²/n, computed from the share
    r = v_a / (v_a + v_b) so that tiny variances do not underflow. It lies between
    min(n_a, n_b) − 1 and n_a + n_b − 2. None below two values a side or when both sides have
    no spread at all (the ratio is 0/0 there).
    """
    sd_a, sd_b = sample_sd(a), sample_sd(b)
    if sd_a is None or sd_b is None:
        return None
    v_a, v_b = sd_a**2 / len(a), sd_b**2 / len(b)
    if v_a + v_b <= 0.0:
        return None
    share = v_a / (v_a + v_b)
    return 1.0 / (share**2 / (len(a) - 1) + (1.0 - share) ** 2 / (len(b) - 1))


_CF_MAX_ITERATIONS = 10_000
_CF_EPSILON = 1e-15
_TINY = 1e-300


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _CF_MAX_ITERATIONS + 1):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            step = d * c
            h *= step
        if abs(step - 1.0) < _CF_EPSILON:
            return h
    return h  # not reached for the arguments the t distribution uses


def regularized_incomplete_beta(a: float, b: float, x: float, y: float | None = None) -> float:
    """I_x(a, b) for a, b > 0 and 0 ≤ x ≤ 1; `y` may pass 1 − x computed without cancellation."""
    if a <= 0.0 or b <= 0.0:
        raise ValueError(f"a and b must be positive, got a={a}, b={b}")
    y = 1.0 - x if y is None else y
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, y) / b


def t_upper_tail(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` > 0 degrees of freedom (non-integer allowed)."""
    if df <= 0.0 or math.isnan(df):
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if math.isinf(df):
        import statistics

        return 1.0 - statistics.NormalDist().cdf(t)
    square = t * t
    half = 0.5 * regularized_incomplete_beta(
        0.5 * df, 0.5, df / (df + square), square / (df + square)
    )
    return half if t >= 0.0 else 1.0 - half


def _t_density(t: float, df: float) -> float:
    log_norm = math.lgamma(0.5 * (df + 1.0)) - math.lgamma(0.5 * df) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - 0.5 * (df + 1.0) * math.log1p(t * t / df))


_LARGE_DF = 1e4  # above this lgamma differences lose digits; the expansion is exact there


def _cornish_fisher(z: float, df: float) -> float:
    """The t quantile's expansion in 1/df around the normal quantile z (Abramowitz & Stegun
    26.7.5); its error is O(df⁻⁵)."""
    if math.isinf(df):
        return z
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0
    return z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with `df` > 0 degrees of freedom (non-integer allowed).

    Exact to ~1e-12 relative: Newton's method on log P(T > t) against log t (close to linear in
    the tail, so it converges in a few steps even for df = 1), kept inside a shrinking bracket
    that falls back to bisection. The distribution function is the regularised incomplete beta
    function. Above df = 1e4 (and at df = inf) an asymptotic expansion takes over.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie strictly between 0 and 1, got {p}")
    if df <= 0.0 or math.isnan(df):
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    import statistics

    z = statistics.NormalDist().inv_cdf(p)
    if df >= _LARGE_DF:
        return _cornish_fisher(z, df)
    target = math.log1p(-p)  # log of the upper tail the quantile leaves
    # Cornish–Fisher's first term as the start; work in u = log t over a bracket [lo, hi].
    u = math.log(z + (z**3 + z) / (4.0 * df))
    lo, hi = -math.inf, math.inf
    for _ in range(200):
        t = math.exp(u)
        tail = t_upper_tail(t, df)
        if tail <= 0.0:  # beyond double precision: the root is to the left
            hi = u
            u = 0.5 * (lo + hi) if math.isfinite(lo) else u - 1.0
            continue
        gap = math.log(tail) - target
        if gap > 0.0:
            lo = u
        else:
            hi = u
        slope = -t * _t_density(t, df) / tail  # d log(tail) / d log(t)
        step = gap / slope if slope < 0.0 else math.nan
        nxt = u - step
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi) if math.isfinite(lo) and math.isfinite(hi) else u - gap
        if abs(nxt - u) < 1e-13:
            return math.exp(nxt)
        u = nxt
    return math.exp(u)
