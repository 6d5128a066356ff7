"""`compare` is honest: its significance call against trials drawn from known distributions.

A/A pairs (both sides from one distribution) must be called significant in ≤ 5 % of 1,000 seeded
cases at 2, 3 and 5 trials a side; a 10 % difference with 5 trials a side and 2 % noise must be
found in ≥ 95 %. The t quantile behind the threshold is checked against tabulated values.
"""

from __future__ import annotations

import math
import random

import pytest

from libreyolo.analysis.compare import SE_MULTIPLE, significance, threshold_multiplier
from libreyolo.analysis.stats import t_quantile, t_upper_tail, welch_df
from libreyolo.document.model import Profile
from tests.profiles import repeat_profile

CASES = 1_000
MEAN = 100.0  # img/s
ALPHA = 0.05


def _profile(values: list[float]) -> Profile:
    """A minimal `--repeat` document: the trials and their mean as the headline img/s."""
    return repeat_profile(values)


def significant_rate(seed: int, n: int, mean_after: float, noise: float) -> float:
    """Share of CASES seeded comparisons called significant; both sides have sd = noise × MEAN."""
    rng = random.Random(seed)
    hits = 0
    for _ in range(CASES):
        before = [rng.gauss(MEAN, noise * MEAN) for _ in range(n)]
        after = [rng.gauss(mean_after, noise * MEAN) for _ in range(n)]
        result = significance(_profile(before), _profile(after))
        assert result.significant is not None
        hits += result.significant
    return hits / CASES


@pytest.mark.parametrize("n", [2, 3, 5])
def test_a_a_comparisons_are_rarely_significant(n: int) -> None:
    rate = significant_rate(seed=1000 + n, n=n, mean_after=MEAN, noise=0.02)
    print(f"A/A false-positive rate, n={n} a side: {rate:.3f}")
    assert rate <= ALPHA


def test_a_ten_percent_difference_is_found_with_five_trials() -> None:
    power = significant_rate(seed=2005, n=5, mean_after=1.1 * MEAN, noise=0.02)
    print(f"power, +10 % with 2 % noise, n=5 a side: {power:.3f}")
    assert power >= 0.95


@pytest.mark.parametrize(
    ("df", "expected"),
    [
        (1, 12.706204736174707),  # tan(0.475 π)
        (2, 4.302652729749464),  # 0.95 / sqrt(2 × 0.975 × 0.025)
        (4, 2.7764451051977934),
        (8, 2.3060041352041662),
        (30, 2.0422724563012373),
        (4.5, 2.658912347204404),  # non-integer df (Welch)
        (1.3, 7.500529325562034),
        (1e4, 1.9602012398906263),
        (1e6, 1.959966356814107),
        (math.inf, 1.959963984540054),
    ],
)
def test_t_quantile_matches_tables(df: float, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, rel=1e-11)


def test_t_quantile_is_symmetric_and_inverts_the_tail() -> None:
    assert t_quantile(0.5, 3.0) == 0.0
    assert t_quantile(0.025, 4.0) == pytest.approx(-2.7764451051977934, rel=1e-11)
    assert t_quantile(0.995, 1.0) == pytest.approx(63.65674116287399, rel=1e-11)
    for df in (0.7, 1.0, 2.5, 7.0, 55.0, 600.0):
        for p in (0.6, 0.9, 0.975, 0.999):
            assert t_upper_tail(t_quantile(p, df), df) == pytest.approx(1 - p, rel=1e-9)
    with pytest.raises(ValueError):
        t_quantile(1.0, 3.0)
    with pytest.raises(ValueError):
        t_quantile(0.9, 0.0)


def test_welch_df_spans_its_bounds() -> None:
    equal = welch_df([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert equal == pytest.approx(4.0)  # equal n and spread: n_a + n_b − 2
    assert welch_df([1.0, 1.0, 1.0], [4.0, 5.0, 6.0, 7.0]) == pytest.approx(3.0)  # n_b − 1
    assert welch_df([1.0, 1.0], [2.0, 2.0]) is None  # no spread at all
    assert welch_df([1.0], [2.0, 3.0]) is None


def test_threshold_never_drops_below_twice_the_standard_error() -> None:
    assert threshold_multiplier(None) == SE_MULTIPLE
    assert threshold_multiplier(4.0) == pytest.approx(2.776445105197793)
    assert threshold_multiplier(1e6) == SE_MULTIPLE  # t < 2 for large df: the spec's floor


def test_the_text_states_the_comparison_made() -> None:
    result = significance(_profile([10.0, 11.0, 12.0]), _profile([13.0, 14.0, 15.0]))
    assert result.df == pytest.approx(4.0)
    assert result.multiplier == pytest.approx(2.776445105197793)
    assert result.standard_error == pytest.approx(math.sqrt(2 / 3))
    assert result.text == "|d|=3.0 vs 2.78*SE=2.3 (Welch t, df=4.0)"
    assert result.significant is True


def test_a_difference_between_2_and_t_standard_errors_is_not_significant() -> None:
    # |d| = 2.5·SE: the old fixed 2·SE rule called this, Welch with df = 4 does not.
    shift = 2.5 * math.sqrt(2 / 3)
    before = [10.0, 11.0, 12.0]
    result = significance(_profile(before), _profile([v + shift for v in before]))
    assert result.df == pytest.approx(4.0)
    assert result.significant is False


def test_zero_spread_calls_any_difference_and_no_tie() -> None:
    split = significance(_profile([50.0, 50.0]), _profile([51.0, 51.0]))
    assert split.significant is True
    assert split.standard_error == 0.0 and split.df is None and split.multiplier == SE_MULTIPLE
    assert split.text == "|d|=1.0 vs 2.00*SE=0.0 (no spread in either side's trials)"
    tie = significance(_profile([50.0, 50.0]), _profile([50.0, 50.0]))
    assert tie.significant is False


def test_one_side_without_spread_uses_the_other_sides_df() -> None:
    result = significance(_profile([50.0, 50.0, 50.0]), _profile([49.0, 50.0, 51.0, 52.0]))
    assert result.df == pytest.approx(3.0)
    assert result.multiplier == pytest.approx(t_quantile(0.975, 3.0))


def test_widely_spread_trials_are_flagged() -> None:
    from libreyolo.analysis.compare import compare

    steady, noisy = _profile([100.0, 101.0, 99.0]), _profile([66.0, 49.0, 50.0])
    assert compare(steady, steady).warnings == ()
    warnings = compare(steady, noisy).warnings
    assert warnings == (
        "the after trials vary by 17% (sample SD / mean): the machine was noisy, so treat the "
        "significance call with care",
    )
