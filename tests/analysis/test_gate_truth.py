"""The regression gate against trials drawn from known distributions, like test_compare_truth.

A/A pairs at 3 trials a side and 2 % noise must not fail a 5 % gate in ≥ 95 % of 1,000 seeded
cases; a 20 % drop in img/s (or rise in latency) at 3 trials and 2 % noise must fail every time.
"""

from __future__ import annotations

import random

import pytest

from libreyolo.analysis.compare import compare
from libreyolo.analysis.gate import Gate
from libreyolo.document.model import Profile, RunInfo, Tool, Trial

CASES = 1_000
MEAN = 100.0
NOISE = 0.02
GATE_PCT = 5.0


def _profile(metric: str, values: list[float], mode: str = "training") -> Profile:
    """A `--repeat` document whose trials (and headline mean) hold one metric."""
    return Profile(
        kind="train" if mode == "training" else "infer",
        created=None,
        tool=Tool(version="2.0.0"),
        run=RunInfo(mode=mode),  # type: ignore[arg-type]
        metrics={metric: sum(values) / len(values)},
        trials=[Trial(index=i, metrics={metric: v}) for i, v in enumerate(values)],
    )


def _gate(metric: str, before: list[float], after: list[float], mode: str) -> Gate:
    result = compare(
        _profile(metric, before, mode),
        _profile(metric, after, mode),
        fail_on_regression_pct=GATE_PCT,
        metric=metric,
    )
    assert result.gate is not None
    return result.gate


def failure_rate(seed: int, metric: str, mean_after: float, mode: str = "training") -> float:
    """Share of CASES seeded 3-against-3 comparisons that fail the gate."""
    rng = random.Random(seed)
    failures = 0
    for _ in range(CASES):
        before = [rng.gauss(MEAN, NOISE * MEAN) for _ in range(3)]
        after = [rng.gauss(mean_after, NOISE * MEAN) for _ in range(3)]
        failures += _gate(metric, before, after, mode).failed
    return failures / CASES


@pytest.mark.parametrize(
    ("metric", "mode"),
    [("img_per_s", "training"), ("step_ms", "training"), ("latency_p50_ms", "inference")],
)
def test_a_a_comparisons_rarely_fail_the_gate(metric: str, mode: str) -> None:
    rate = failure_rate(seed=3003, metric=metric, mean_after=MEAN, mode=mode)
    print(f"A/A false-failure rate, {metric}, n=3 a side: {rate:.3f}")
    assert rate <= 0.05


def test_a_twenty_percent_throughput_drop_always_fails() -> None:
    assert failure_rate(seed=3020, metric="img_per_s", mean_after=0.8 * MEAN) == 1.0


def test_a_twenty_percent_latency_rise_always_fails() -> None:
    rate = failure_rate(seed=3021, metric="latency_p50_ms", mean_after=1.2 * MEAN, mode="inference")
    assert rate == 1.0


def test_improvements_never_fail() -> None:
    assert failure_rate(seed=3022, metric="img_per_s", mean_after=1.2 * MEAN) == 0.0
    assert failure_rate(seed=3023, metric="step_ms", mean_after=0.8 * MEAN) == 0.0


def test_a_significant_change_under_the_threshold_passes() -> None:
    gate = _gate("img_per_s", [100.0, 100.1, 99.9], [97.0, 97.1, 96.9], "training")
    assert gate.significant and not gate.failed
    assert gate.change_pct == pytest.approx(-3.0)
    assert gate.worse_pct == pytest.approx(3.0)


def test_a_large_change_inside_the_noise_passes() -> None:
    gate = _gate("img_per_s", [100.0, 60.0, 140.0], [90.0, 50.0, 130.0], "training")
    assert gate.worse_pct > GATE_PCT and not gate.significant and not gate.failed
