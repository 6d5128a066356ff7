"""Compare two profiles: deltas of the headline numbers and, with trials, a significance call.

The significance rule: both sides need ≥ 2 trials (`--repeat`), and a difference counts when
|mean_b − mean_a| > k × SE, SE = sqrt(s_a²/n_a + s_b²/n_b) with sample SDs and
k = max(2, t_{0.975, ν}), ν the Welch–Satterthwaite degrees of freedom (Welch's two-sided t-test
at 5 %). The specification's "exceeds twice the combined standard error" is a necessary
condition and stays the floor; a fixed 2 alone is anti-conservative with the few trials a
`--repeat` gives (for t with 1–8 df, P(|t| > 2) is 30–8 %, not 5 %). An A/A comparison with
equal trial counts stays under 5 % false positives (its statistic is then exactly t with
n_a + n_b − 2 df, and ν never exceeds that); with unequal counts Welch's df is an
approximation (2 against 5 trials of one normal distribution: about 6.6 %).
When neither side varies at all (SE = 0) there is no noise to test against: any non-zero
difference is significant (the limit of the t-test, and libreyolo 1.6.0's behaviour) and an
exact tie is not.
Per-step samples of one run are not independent trials and never stand in for them. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from libreyolo.analysis import stats
from libreyolo.analysis.compute_compare import ComputeDeltas, compute_deltas, compute_warnings
from libreyolo.analysis.delta import Delta, ShareDelta
from libreyolo.analysis.diff import PhaseTest, ProfileDiff, diff_profiles, with_phase_tests
from libreyolo.analysis.exec_compare import disagreement, exec_warnings
from libreyolo.analysis.gate import Gate, gate_metric, regression_gate, require_trials
from libreyolo.analysis.result_kind import ResultKind
from libreyolo.analysis.scaling import Scaling, scaling
from libreyolo.analysis.tensor_compare import TensorDeltas, tensor_deltas
from libreyolo.analysis.trainer_gap import TrainerGap, trainer_gap
from libreyolo.defaults import MIN_AGREEMENT
from libreyolo.document.health_names import SUSPECT
from libreyolo.document.mode import Mode
from libreyolo.document.model import Profile
from libreyolo.errors import UsageError

NOISY_TRIALS_CV = 0.10  # trials spreading more than this were measured on a changing machine
SE_MULTIPLE = 2.0  # "exceeds twice the combined standard error": the floor of the threshold
CONFIDENCE = 0.975  # two-sided 5 % Welch t-test
SINGLE_RUN = "single run, use 'run --repeat N' for a significance call"  # libreyolo 1.6.0 wording
SINGLE_RUN_ADVICE = "single run, use {commands} for a significance call"  # SINGLE_RUN's pattern
# The command that measures trials of a profile, by its mode (training: 1.6.0's advice).
REPEAT_COMMANDS = {Mode.TRAIN: "run --repeat N", Mode.INFER: "infer --repeat N"}
SINGLE_WINDOW = "single window"  # the other tested deltas: one measured window, no trials
TESTED = ("step_ms", "latency_p50_ms", "latency_p99_ms")  # tested like img/s when trials allow
MATCHED_SETTINGS = ("mode", "batch", "imgsz", "device", "amp")


@dataclass(frozen=True, slots=True)
class Significance:
    significant: bool | None
    text: str
    mean_before: float | None = None
    mean_after: float | None = None
    std: tuple[float | None, float | None] = (None, None)
    n: tuple[int, int] = (1, 1)
    standard_error: float | None = None
    multiplier: float | None = None  # k in |d| > k·SE: max(2, t_{0.975, df})
    df: float | None = None  # Welch–Satterthwaite degrees of freedom; None when SE = 0

    @property
    def how(self) -> str:
        """The test behind the call (`test_name` of its df)."""
        return test_name(self.df)


@dataclass(frozen=True, slots=True)
class Comparison:
    result_kind: ClassVar[ResultKind] = ResultKind.COMPARE
    img_per_s: Delta
    significance: Significance
    step_ms: Delta
    tested: dict[str, Significance]  # TESTED metric -> its call (img/s's is `significance`)
    has_gpu: bool  # either side's trace saw GPU work: the GPU lines mean something
    gate: Gate | None  # --fail-on-regression's verdict
    ms_per_image: Delta
    gpu_util: ShareDelta
    host_overhead_ms: Delta
    launches_per_step: Delta
    bound: Delta
    latency_p50_ms: Delta | None
    latency_p99_ms: Delta | None
    warnings: tuple[str, ...]
    cpu_wait_frac: ShareDelta
    contended: Delta
    compute: ComputeDeltas
    diff: ProfileDiff | None = None
    # A training step's tensor peak and categories, where either side tracked one.
    tensors: TensorDeltas | None = None
    # The built-in step beside libreyolo 1.x's own trainer (one side `--trainer`), per part.
    trainer_gap: TrainerGap | None = None
    # Runs on different numbers of ranks: the world's throughput and scaling efficiency.
    scaling: Scaling | None = None

    @property
    def failed_gates(self) -> tuple[tuple[str | None, Gate], ...]:
        """The failed gate, if any: one entry, no point name."""
        return ((None, self.gate),) if self.gate is not None and self.gate.failed else ()

    @property
    def gate_failed(self) -> bool:
        """The gate was asked for and failed (the command exits 4)."""
        return bool(self.failed_gates)


def _trial_values(profile: Profile, metric: str = "img_per_s") -> list[float]:
    values = [t.metrics.get(metric) for t in profile.trials]
    return [v for v in map(stats.as_number, values) if v is not None]


def _phase_test(before: Profile, after: Profile) -> PhaseTest:
    """A phase's wall change called by the img/s rule on its `<phase>_wall_ms` trials."""

    def test(phase: str) -> tuple[bool | None, str]:
        sig = significance(before, after, f"{phase}_wall_ms")
        return sig.significant, sig.text

    return test


def test_name(df: float | None) -> str:
    """Welch's t and its degrees of freedom, or why no test was needed (SE = 0: no spread)."""
    return "no spread in either side's trials" if df is None else f"Welch t, df={df:.1f}"


def threshold_multiplier(df: float | None) -> float:
    """k in |d| > k·SE: the Welch t quantile for `df`, never below the specified 2."""
    return SE_MULTIPLE if df is None else max(SE_MULTIPLE, stats.t_quantile(CONFIDENCE, df))


def repeat_command(modes: Iterable[Mode]) -> str:
    """The quoted command(s) that measure trials of profiles in these modes:
    'infer --repeat N' for inference, 'run --repeat N' for training."""
    default = REPEAT_COMMANDS[Mode.TRAIN]
    commands = dict.fromkeys(REPEAT_COMMANDS[mode] for mode in modes) or {default: 0}
    return " and ".join(f"'{command}'" for command in commands)


def single_run_advice(*single: Profile) -> str:
    """Why img/s has no call: the sides without trials, and the command that measures them
    (1.6.0's SINGLE_RUN wording, word for word, for training profiles)."""
    return SINGLE_RUN_ADVICE.format(commands=repeat_command(p.kind for p in single))


def significance(before: Profile, after: Profile, metric: str = "img_per_s") -> Significance:
    """The significance rule (module docstring) over the two profiles' trials of `metric`."""
    a, b = _trial_values(before, metric), _trial_values(after, metric)
    img = metric == "img_per_s"
    if before.metrics.get(metric) is None or after.metrics.get(metric) is None:
        return Significance(None, f"{'img/s' if img else metric} unavailable")
    se = stats.combined_standard_error(a, b)
    if se is None:
        single = [p for p, values in ((before, a), (after, b)) if len(values) < 2]
        text = single_run_advice(*single) if img else SINGLE_WINDOW
        return Significance(None, text, n=(max(len(a), 1), max(len(b), 1)))
    mean_a, mean_b = stats.mean(a) or 0.0, stats.mean(b) or 0.0
    diff = abs(mean_b - mean_a)
    df = stats.welch_df(a, b) if se > 0.0 else None
    k = threshold_multiplier(df)
    return Significance(
        diff > k * se,
        f"|d|={diff:.1f} vs {k:.2f}*SE={k * se:.1f} ({test_name(df)})",
        mean_a,
        mean_b,
        (stats.sample_sd(a), stats.sample_sd(b)),
        (len(a), len(b)),
        se,
        k,
        df,
    )


def refuse_suspect(before: Profile, after: Profile) -> None:
    """UsageError when a significance call would rest on a trial (or an aggregate) whose trace
    failed its health check: its times are not to be believed, so no difference over them is."""
    if len(before.trials) < 2 or len(after.trials) < 2:
        return  # no significance call is made
    found = [
        (side, where) for side, p in (("before", before), ("after", after)) for where in _suspect(p)
    ]
    if not found:
        return
    which = "; ".join(f"the {side} profile's {where}" for side, where in found)
    raise UsageError(
        f"no significance call over a suspect trace: {which} failed its health check",
        hint="measure it again, or pass --allow-suspect to call it anyway; its summary names "
        "the check",
    )


def _suspect(profile: Profile) -> list[str]:
    """Where `profile` is suspect: its trials by number, else the aggregate itself."""
    trials = [f"trial {t.index + 1}" for t in profile.trials if t.bound == SUSPECT]
    if trials:
        return trials
    return ["trials (together)"] if profile.metrics.get("bound") == SUSPECT else []


def _noisy_trials(profile: Profile, side: str) -> tuple[str, ...]:
    """A warning when one side's trials spread widely: the significance call assumes the
    machine stayed the same within and between the runs, and such a spread says it did not."""
    values = _trial_values(profile)
    mean, sd = stats.mean(values), stats.sample_sd(values)
    if mean is None or sd is None or mean <= 0 or sd / mean <= NOISY_TRIALS_CV:
        return ()
    return (
        f"the {side} trials vary by {sd / mean:.0%} (sample SD / mean): the machine was noisy, "
        "so treat the significance call with care",
    )


def _contended(profile: Profile, side: str) -> tuple[str, ...]:
    """A warning when one side was measured on a starved host: its times are inflated by
    however long its threads queued, which varies run to run, so no statistic over them holds."""
    if profile.metrics.get("contended") is not True:
        return ()
    wait = profile.metrics.get("cpu_wait_frac")
    how = f" (threads waited {wait:.0%} of their runnable time for a CPU)" if wait else ""
    return (
        f"the {side} profile was measured on a contended host{how}: "
        "its times are inflated and the significance call cannot be trusted; measure it again "
        "on a quiet machine",
    )


def _rss_definitions(before: Profile, after: Profile) -> tuple[str, ...]:
    """A warning where one side's peak RSS counts the shared library pages (a profile written
    before they were left out) and the other's does not: their difference is not the run's."""
    memories = {"before": before.host_memory, "after": after.host_memory}
    if any(m is None or m.peak_rss_bytes is None for m in memories.values()):
        return ()
    old = [side for side, m in memories.items() if m is not None and m.library_rss_bytes is None]
    if len(old) != 1:
        return ()
    return (
        f"peak_rss_mb is not measured alike: the {old[0]} profile's counts the shared library "
        "pages (it predates leaving them out); measure it again to compare the two",
    )


def _setting(profile: Profile, name: str) -> object:
    return getattr(profile.run, name)


def _ms_per_image(profile: Profile) -> float | None:
    step, batch = profile.metrics.get("step_ms"), _setting(profile, "batch")
    if isinstance(step, int | float) and isinstance(batch, int) and batch > 0:
        return round(float(step) / batch, 3)
    return None


def compare(
    before: Profile,
    after: Profile,
    *,
    top: int = 10,
    fail_on_regression_pct: float | None = None,
    metric: str | None = None,
    allow_suspect: bool = False,
    min_agreement: float = MIN_AGREEMENT,
) -> Comparison:
    """Deltas from `before` to `after`, significance calls, warnings on mismatched runs, the
    per-step changes of phases and the `top` ops and kernels and, with
    `fail_on_regression_pct`, the regression gate on `metric` (UsageError when it cannot
    judge: a metric missing on a side or fewer than 2 trials of it; without `allow_suspect`, a
    significance call over a trial whose trace failed its health check). No img/s call is made
    over a side whose detections disagree with eager fp32 below `min_agreement`."""
    a, b = before.metrics, after.metrics
    if not allow_suspect:
        refuse_suspect(before, after)
    gate = None
    if fail_on_regression_pct is not None:
        metric = gate_metric(before, after, metric)
        counts = (len(_trial_values(before, metric)), len(_trial_values(after, metric)))
        require_trials(before, after, counts)
        sig = significance(before, after, metric)
        gate = regression_gate(metric, fail_on_regression_pct, sig)

    def delta(key: str) -> Delta:
        return Delta(a.get(key), b.get(key))

    inference = before.kind == after.kind == Mode.INFER
    warnings = (
        tuple(
            f"the profiles differ in {name}: {json.dumps(_setting(before, name))} vs "
            f"{json.dumps(_setting(after, name))}"
            for name in MATCHED_SETTINGS
            if _setting(before, name) != _setting(after, name)
        )
        + exec_warnings(before, after)
        + _noisy_trials(before, "before")
        + _noisy_trials(after, "after")
        + _contended(before, "before")
        + _contended(after, "after")
        + compute_warnings(before, after)
        + _rss_definitions(before, after)
    )
    disagrees = disagreement(before, after, min_agreement)
    return Comparison(
        img_per_s=delta("img_per_s"),
        significance=significance(before, after)
        if disagrees is None
        else Significance(None, disagrees),
        step_ms=delta("step_ms"),
        tested={
            name: significance(before, after, name)
            for name in TESTED
            if inference or not name.startswith("latency")
        },
        has_gpu=any(p.trace is not None and p.trace.has_gpu for p in (before, after)),
        gate=gate,
        ms_per_image=Delta(_ms_per_image(before), _ms_per_image(after)),
        gpu_util=ShareDelta(a.get("gpu_util"), b.get("gpu_util")),
        host_overhead_ms=delta("host_overhead_ms"),
        launches_per_step=delta("launches_per_step"),
        bound=delta("bound"),
        latency_p50_ms=delta("latency_p50_ms") if inference else None,
        latency_p99_ms=delta("latency_p99_ms") if inference else None,
        warnings=warnings,
        cpu_wait_frac=ShareDelta(a.get("cpu_wait_frac"), b.get("cpu_wait_frac")),
        contended=delta("contended"),
        compute=compute_deltas(before, after),
        tensors=tensor_deltas(before, after),
        diff=with_phase_tests(diff_profiles(before, after, top), _phase_test(before, after)),
        trainer_gap=trainer_gap(before, after),
        scaling=scaling(before, after),
    )
