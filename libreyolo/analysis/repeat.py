"""`--repeat N`: one document from N trials. Scalars are trial means (with the sample standard
deviation of img/s), tables come from the last trial, notes from every trial, and every trial's
metrics are kept for `compare`'s significance rule. Means keep 3 decimals, except the
efficiency keys' rates and fractions, which keep their significant digits (a GPU's MFU at
batch 1 is 0.0053, not 0.005), and FLOP counts, which stay whole. Pure.
"""

from __future__ import annotations

import msgspec.structs

from libreyolo.analysis import stats
from libreyolo.analysis.efficiency import KEYS as EFFICIENCY_KEYS
from libreyolo.analysis.efficiency import significant
from libreyolo.analysis.verdict import suspect_verdict
from libreyolo.document.health_names import STEP_KERNEL_SPREAD
from libreyolo.document.model import Profile, Scalar, Trial
from libreyolo.kineto.health import check, health_of, spread

MIXED = "mixed"  # libreyolo 1.6.0's label when the trials disagree on the bottleneck


def _rounded(name: str, mean: float) -> Scalar:
    if name.endswith("flops_per_image"):
        return round(mean)
    return significant(mean) if name in EFFICIENCY_KEYS else round(mean, 3)


def aggregate(trials: list[Profile]) -> Profile:
    """The last trial, with averaged scalar metrics and the trials recorded."""
    last = trials[-1]
    metrics = dict(last.metrics)
    for name, value in last.metrics.items():
        values = [stats.as_number(t.metrics.get(name)) for t in trials]
        if stats.as_number(value) is not None and all(v is not None for v in values):
            metrics[name] = _rounded(name, stats.mean([v for v in values if v is not None]) or 0.0)
    ips = [
        v for v in (stats.as_number(t.metrics.get("img_per_s")) for t in trials) if v is not None
    ]
    sd = stats.sample_sd(ips)
    metrics |= {"img_per_s_std": None if sd is None else round(sd, 3), "img_per_s_n": len(ips)}
    contended = [t.metrics.get("contended") for t in trials]
    if any(isinstance(c, bool) for c in contended):  # one starved trial taints the means
        metrics["contended"] = any(c is True for c in contended)
    bounds = {t.verdict.bound for t in trials if t.verdict}
    verdict = last.verdict
    if len(bounds) > 1 and verdict is not None:
        verdict = msgspec.structs.replace(
            verdict, bound=MIXED, why=f"the trials disagree: {', '.join(sorted(bounds))}"
        )
    metrics["bound"] = verdict.bound if verdict else metrics.get("bound")
    records = [
        Trial(
            index=i,
            metrics=dict(t.metrics),
            bound=t.verdict.bound if t.verdict else None,
            pid=t.run.pid,
        )
        for i, t in enumerate(trials)
    ]
    merged = msgspec.structs.replace(
        last, metrics=metrics, verdict=verdict, trials=records, notes=merged_notes(trials)
    )
    return _checked_across_trials(merged, trials)


def _checked_across_trials(merged: Profile, trials: list[Profile]) -> Profile:
    """`merged` with the trials' kernels per step checked against each other (GPU traces): a
    trial far from the others recorded a different trace, and the aggregate is suspect."""
    per_step = [t.metrics.get("kernels_per_step") for t in trials]
    counts = [float(c) for c in per_step if isinstance(c, int | float)]
    trace = merged.trace
    if trace is None or not trace.has_gpu or len(counts) < 2 or len(counts) != len(trials):
        return merged
    across = check("kernels_across_trials", spread(counts), STEP_KERNEL_SPREAD)
    before = trace.health.checks if trace.health is not None else []
    health = health_of([*before, across])
    merged = msgspec.structs.replace(merged, trace=msgspec.structs.replace(trace, health=health))
    if not health.suspect:
        return merged
    verdict = suspect_verdict(health)
    metrics = merged.metrics | {"bound": verdict.bound}
    return msgspec.structs.replace(merged, verdict=verdict, metrics=metrics)


def merged_notes(trials: list[Profile]) -> list[str]:
    """Every trial's notes once, in the order they first appear; a note that not every trial
    made names the trials (1-based) that made it, e.g. "trial 2 of 3: the host was busy"."""
    order: dict[str, list[int]] = {}
    for number, trial in enumerate(trials, start=1):
        for note in dict.fromkeys(trial.notes):
            order.setdefault(note, []).append(number)
    total = len(trials)
    merged = []
    for note, numbers in order.items():
        if len(numbers) == total:
            merged.append(note)
        else:
            which = ", ".join(map(str, numbers))
            merged.append(f"trial{'s' if len(numbers) > 1 else ''} {which} of {total}: {note}")
    return merged
