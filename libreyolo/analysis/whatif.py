"""What-if: project the step time after removing a kernel category or N launches per step.

The model follows the profile's own regime. Below 80 % GPU utilisation the GPU waits on the host,
so the saving is the removed launches × the measured host cost per launch (a removed category
also removes its kernels' launches: its real kernel count). At or above 80 % the GPU is the
bottleneck, so the saving is the GPU time removed; fewer launches alone save nothing there.
On CPU profiles a category is an op category: its self time is removed, and with each of its op
calls the share of the step spent outside any op (Python, dispatch, profiler bookkeeping) that one
call carries; self time alone predicted under half of what folding BatchNorm saved. Every projection
lists its assumptions, and says whether a test checked it against a measurement (CHECKED). Pure.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from libreyolo.analysis.metrics import per_step_divisor
from libreyolo.analysis.opclass import op_category, op_category_ms
from libreyolo.analysis.result_kind import ResultKind
from libreyolo.analysis.verdict import UTIL_COMPUTE
from libreyolo.document.model import Profile
from libreyolo.errors import AnalysisError, UnknownNameError, UsageError

CAVEAT = "rough estimate (per-launch host cost is approximate); verify by profiling."
CPU_CAVEAT = (
    "rough estimate (time outside the ops is shared out evenly over the op calls); "
    "verify by profiling."
)
NOT_CHECKED = "not checked against a measurement"


@dataclass(frozen=True, slots=True)
class Check:
    """A projection the truth suite checks against the change made real and measured."""

    change: str  # how the test makes the removal real
    bound_pct: float  # |projected - measured| / measured that the test enforces, in percent
    test: str

    def statement(self, regime: str, category: str) -> str:
        return (
            f"checked on {regime.upper()}: removing {category} by {self.change} was predicted "
            f"within {self.bound_pct:g}% of the measured step (truth suite, {self.test})"
        )


# (regime, category) -> its check. tests/truth/test_whatif_truth.py enforces bound_pct from here,
# so the output never claims more than is tested. Measured |projected - measured| / measured on
# LibreYOLO9t, CPU, one thread, imgsz 160-256, 18 pairs: median 2.5 %, worst 8.6 % (self time
# alone: median 6.5 %, worst 13.8 %); the test takes the median of 3 pairs against 10 %.
CHECKED: dict[tuple[str, str], Check] = {
    ("cpu", "norm"): Check(
        "folding BatchNorm into the convolutions (infer --fuse bn)",
        10.0,
        "tests/truth/test_whatif_truth.py",
    ),
}


def checked(regime: str, category: str | None) -> str:
    """What the truth suite says about this kind of projection (NOT_CHECKED when nothing)."""
    check = CHECKED.get((regime, category or ""))
    return NOT_CHECKED if check is None else check.statement(regime, category or "")


@dataclass(frozen=True, slots=True)
class Projection:
    result_kind: ClassVar[ResultKind] = ResultKind.WHAT_IF
    bound: str | None
    regime: str  # "host / launch", "compute", "cpu", or "measured" (a variant trial)
    mechanism: str
    removed_gpu_ms: float
    removed_launches: int
    step_ms: float
    projected_step_ms: float
    img_per_s: float | None
    projected_img_per_s: float | None
    assumptions: tuple[str, ...]
    caveat: str = CAVEAT
    checked: str = NOT_CHECKED


def _match(names: list[str], wanted: str) -> str:
    hit = next((n for n in names if wanted.lower() in n.lower()), None)
    if hit is None:
        raise UnknownNameError(f"no category matching '{wanted}'. have: {', '.join(names)}")
    return hit


def _finish(
    profile: Profile,
    regime: str,
    mechanism: str,
    removed_gpu_ms: float,
    removed_launches: int,
    projected: float,
    assumptions: tuple[str, ...],
    category: str | None = None,
) -> Projection:
    step = float(profile.metrics.get("step_ms") or 0.0)
    batch = profile.run.batch
    now = profile.metrics.get("img_per_s")
    projected_ips = (
        round(batch * 1000 / projected, 1) if isinstance(batch, int) and projected > 0 else None
    )
    bound = profile.metrics.get("bound")
    return Projection(
        None if bound is None else str(bound),
        regime,
        mechanism,
        round(removed_gpu_ms, 2),
        removed_launches,
        step,
        round(projected, 1),
        float(now) if isinstance(now, int | float) else None,
        projected_ips,
        assumptions,
        caveat=CPU_CAVEAT if regime == "cpu" else CAVEAT,
        checked=checked(regime, category),
    )


def _variant_step(profile: Profile, variant: str) -> Projection:
    """The step with `variant`: the measured step less what the variant saved on the part it
    changes, both sides timed on one batch after the window (`Profile.variant_trials`)."""
    trial = next((t for t in profile.variant_trials if t.variant == variant), None)
    if trial is None:
        have = ", ".join(t.variant for t in profile.variant_trials) or "none"
        used = "; the run used it already" if variant in profile.run.variants else ""
        raise UnknownNameError(
            f"the profile has no trial of variant '{variant}' (trials: {have}){used}"
        )
    step = float(profile.metrics.get("step_ms") or 0.0)
    saved = trial.as_run_ms - trial.variant_ms
    if step <= 0 or saved >= step:
        raise AnalysisError(
            f"variant '{variant}' saved {saved:.0f} ms of a {step:.0f} ms step: the numbers "
            "cannot support a projection",
            hint=f"measure it: libreyolo profile run ... --variant {variant}",
        )
    mechanism = (
        f"measured: {trial.part} took {trial.as_run_ms:.1f} ms, {trial.variant_ms:.1f} ms with "
        f"--variant {variant} (median of {trial.repeats} each, after the window)"
    )
    assumptions = (
        "the rest of the step is the same code with or without the variant",
        "the part was timed on one batch; the window's batches may carry other box counts",
    )
    return dataclasses.replace(
        _finish(profile, "measured", mechanism, 0.0, 0, step - saved, assumptions),
        caveat=f"measured on the part it changes; confirm with profile run --variant {variant}.",
        checked="measured: the variant ran beside the run's own way on the same batch",
    )


def _cpu_projection(profile: Profile, category: str | None, launches: int | None) -> Projection:
    if launches is not None:
        raise UsageError(
            "--remove-launches does not apply to a CPU profile: the CPU runs ops, it launches "
            "no kernels",
            hint="use --remove-category with an op category (gemm / conv, norm, layout, ...)",
        )
    ops = profile.trace.ops if profile.trace else []
    if any(op.self_ms is None for op in ops):
        raise AnalysisError(
            "what-if needs self op times; this libreyolo 1.6.0 profile stores inclusive times "
            "only (nested ops count several times)",
            hint="re-measure with this version of libreyolo",
        )
    totals = op_category_ms(ops)
    name = _match(sorted(totals, key=lambda k: -totals[k]), category or "")
    n = per_step_divisor(profile.trace)
    step = float(profile.metrics.get("step_ms") or 0.0)
    calls = sum(op.num_calls for op in ops) / n
    removed_calls = sum(op.num_calls for op in ops if op_category(op.name) == name) / n
    # The step's time outside any op (Python, dispatch, the profiler's own bookkeeping), per call.
    between_ms = max(step - sum(totals.values()) / n, 0.0) / calls if calls else 0.0
    removed = totals[name] / n + removed_calls * between_ms
    mechanism = (
        f"cpu-bound: ~{removed:.1f} ms less {name} op time per step "
        f"(~{removed_calls:.0f} op calls, each also ~{between_ms * 1000:.1f}us outside the ops)"
    )
    assumptions = (
        "ops run one after another on the CPU, so their self time adds up",
        "the step's time outside any op is spread evenly over its op calls",
    )
    projected = max(step - removed, 0.0)
    return _finish(profile, "cpu", mechanism, 0.0, 0, projected, assumptions, name)


def project(
    profile: Profile,
    *,
    category: str | None = None,
    launches: int | None = None,
    variant: str | None = None,
) -> Projection:
    """The projected step after removing a category and/or `launches` launches per step, or
    with one of this package's speed-ups the run did not use (`variant`, measured)."""
    if variant is not None:
        if category or launches is not None:
            raise UsageError("--variant is measured, not projected: give it alone")
        return _variant_step(profile, variant)
    if not category and launches is None:
        raise UsageError("specify --remove-category, --remove-launches or --variant")
    trace = profile.trace
    if trace is None or not trace.has_gpu:
        return _cpu_projection(profile, category, launches)
    n = per_step_divisor(trace)
    removed_gpu, removed_launches, name = 0.0, launches or 0, None
    if category:
        name = _match([c.name for c in trace.categories], category)
        removed_gpu = sum(c.total_ms for c in trace.categories if c.name == name) / n
        removed_launches += round(sum(k.num_calls for k in trace.kernels if k.category == name) / n)
    m = profile.metrics
    step, util = float(m.get("step_ms") or 0.0), float(m.get("gpu_util") or 0.0)
    busy = float(m.get("gpu_busy_ms") or 0.0)
    if util < UTIL_COMPUTE:
        cost_us = trace.launches.host_us_per_launch or 0.0
        floor = max(busy - removed_gpu, 0.0) + float(m.get("dataload_ms") or 0.0)
        projected = max(step - removed_launches * cost_us / 1000, floor)
        mechanism = (
            f"host/launch-bound: ~{removed_launches} fewer launches x ~{cost_us:.0f}us host cost"
        )
        assumptions = (
            "each removed launch saves the measured median host cost of one launch",
            "the GPU work that remains still has to run (floor: remaining busy time)",
        )
        return _finish(
            profile,
            "host / launch",
            mechanism,
            removed_gpu,
            removed_launches,
            projected,
            assumptions,
            name,
        )
    mechanism = f"compute-bound: ~{removed_gpu:.1f} ms less GPU work"
    assumptions = (
        "the GPU is saturated: removed GPU time comes off the step one for one",
        "fewer launches alone save nothing while the GPU is the bottleneck",
    )
    projected = max(step - removed_gpu, step - busy)
    return _finish(
        profile, "compute", mechanism, removed_gpu, removed_launches, projected, assumptions, name
    )
