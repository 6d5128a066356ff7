"""The regression gate of `compare --fail-on-regression PCT`: fail when the after profile is worse
by more than PCT percent on one metric AND the difference passes compare's significance rule.

Both halves are needed: a change inside the noise is no regression however large it reads from a
single window, and a significant 0.5 % change is below what the caller said matters. So the gate
refuses to judge without ≥ 2 trials a side (`--repeat`). The change is between the trial means,
the numbers the significance call tests. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from libreyolo.document.mode import Mode
from libreyolo.errors import UsageError

if TYPE_CHECKING:
    from libreyolo.analysis.compare import Significance
    from libreyolo.document.model import Profile

# metric -> (label, True when higher is better)
GATE_METRICS: dict[str, tuple[str, bool]] = {
    "img_per_s": ("img/s", True),
    "latency_p50_ms": ("latency p50", False),
    "step_ms": ("step time", False),
}
REPEAT_HINT = "--repeat 3"


@dataclass(frozen=True, slots=True)
class Gate:
    metric: str
    threshold_pct: float
    change_pct: float  # (mean_after − mean_before) / mean_before, in percent
    significant: bool
    failed: bool
    how: str  # the test behind `significant`: "Welch t, df=3.9" or "no spread ..."

    @property
    def worse_pct(self) -> float:
        """How much worse after is, in percent (negative when it improved)."""
        return _worse_pct(self.metric, self.change_pct)


def _worse_pct(metric: str, change_pct: float) -> float:
    return -change_pct if GATE_METRICS[metric][1] else change_pct


def gate_metric(before: Profile, after: Profile, requested: str | None) -> str:
    """The metric to gate on: the request, or img/s for training and latency p50 for inference.
    UsageError when the two profiles measured different things (a training step's img/s is no
    baseline for an inference call's)."""
    if before.kind != after.kind:
        raise UsageError(
            f"--fail-on-regression gates like against like: the before profile is "
            f"{_mode_name(before)}, the after profile {_mode_name(after)}",
            hint="compare two training profiles or two inference profiles",
        )
    inference = before.kind == Mode.INFER
    metric = requested or ("latency_p50_ms" if inference else "img_per_s")
    if metric.startswith("latency") and not inference:
        side = "before" if before.kind != Mode.INFER else "after"
        raise UsageError(
            f"--metric {metric} needs inference profiles; the {side} profile is a training run",
            hint="use --metric img_per_s or step_ms",
        )
    for side, profile in (("before", before), ("after", after)):
        if profile.metrics.get(metric) is None:
            raise UsageError(f"--metric {metric}: the {side} profile has no {metric}")
    return metric


def _mode_name(profile: Profile) -> str:
    return "a training run" if profile.kind == Mode.TRAIN else "an inference run"


def require_trials(before: Profile, after: Profile, values: tuple[int, int]) -> None:
    """UsageError naming the side(s) with fewer than 2 trial values of the gated metric."""
    short = [
        (side, "is a single run" if len(profile.trials) < 2 else "has no trials of this metric")
        for side, profile, n in (("before", before, values[0]), ("after", after, values[1]))
        if n < 2
    ]
    if not short:
        return
    which = " and ".join(f"the {side} profile {why}" for side, why in short)
    which += ": measure it" if len(short) == 1 else ": measure them"
    raise UsageError(f"--fail-on-regression needs trials on both sides; {which} with {REPEAT_HINT}")


def regression_gate(metric: str, threshold_pct: float, sig: Significance) -> Gate:
    """The gate's verdict on one metric's significance call (trials on both sides)."""
    mean_a, mean_b = sig.mean_before, sig.mean_after
    if mean_a is None or mean_b is None or mean_a <= 0:
        raise UsageError(f"--fail-on-regression: the before trials' mean {metric} is not positive")
    change_pct = (mean_b - mean_a) / mean_a * 100.0
    significant = sig.significant is True
    failed = _worse_pct(metric, change_pct) > threshold_pct and significant
    return Gate(metric, threshold_pct, change_pct, significant, failed, sig.how)
