"""A multi-process training run as one world: each rank's figures, its skew, the straggler
and why, and whether the step waits on communication.

Pure. In synchronous data-parallel training every rank's step ends at the same gradient
all-reduce, so step times barely differ: a fast rank waits there for the slow one. What
differs is each rank's own work, its step less the collective time nothing computed beside
(`comm_exposed_pct`, HolisticTraceAnalysis's exposed communication): the rank with the most is
the straggler, and the phase where its time, less the collective wait inside it, exceeds the
others' median is the cause (a rank waits in the loss's all-reduce in forward and for DDP's
last bucket at the end of backward: the trace splits host collectives' wait by phase; GPU
collectives' wait is taken from backward).
The wire's own cost is the exposure of the rank that waits least for its peers.

Verdicts: `straggler` when the own-work skew reaches STRAGGLER_SKEW_PCT on ranks no other
process starved, over at least MIN_STRAGGLER_STEPS measured steps (it names the rank and the
phase); else `communication` when even the
least-waiting rank spends COMM_SHARE_BOUND of its step exposed in collectives; else the rank's
own verdict stands.
A contended or suspect verdict is never replaced: its numbers name no bottleneck.
"""

from __future__ import annotations

import statistics

from libreyolo.analysis.contention import cpus_used
from libreyolo.analysis.metrics import per_step_divisor
from libreyolo.analysis.stats import as_number
from libreyolo.document.health_names import SUSPECT
from libreyolo.document.model import Profile, Scalar, Verdict
from libreyolo.document.phases import BACKWARD, DATALOAD, TO_DEVICE, TRAIN_PHASES
from libreyolo.document.world import RankRecord, World

STRAGGLER_SKEW_PCT = 20.0  # the slowest rank's own work ≥ 20 % above the fastest's (balanced
# 2-rank CPU runs here: 1 to 4 %, once 16 %)
# A skew over fewer measured steps is a step's luck, not a rank's: balanced 2-step runs here
# read 20.6 % (YOLOv9-t, 256 px, 1 image a rank); the planted straggler's runs take 6.
MIN_STRAGGLER_STEPS = 5
COMM_SHARE_BOUND = 0.2  # ≥ 20 % of the step waits in collectives on every rank
KEYS = (
    "world_size",
    "global_batch",
    "global_img_per_s",
    "rank_skew_pct",
    "straggler_rank",
    "straggler_cause",
    "straggler_excess_ms",
    "comm_wait_ms",
)
CAUSE_LEVERS = {
    DATALOAD: [
        "more --workers on the straggler's host",
        "cache images in RAM (--cache)",
        "check that host's disk and CPU load",
    ],
    TO_DEVICE: ["pinned memory and non_blocking copies", "check that rank's PCIe/NUMA placement"],
    "compute": [
        "check that device's clocks, temperature and other jobs",
        "even out the per-rank work (images of very different sizes or box counts)",
    ],
}
COMM_LEVERS = [
    "a larger per-rank batch (more compute to hide each all-reduce)",
    "larger DDP buckets (bucket_cap_mb)",
    "gradient accumulation (fewer all-reduces per image)",
]


def rank_record(rank: int, profile: Profile, path: str) -> RankRecord:
    """What the world compares of one rank's finished profile (at `path`, relative)."""
    metrics = profile.metrics
    phases = {
        phase: value
        for phase in TRAIN_PHASES
        if isinstance(value := metrics.get(f"{phase}_wall_ms"), int | float)
    }
    return RankRecord(
        rank=rank,
        device=profile.run.device or "",
        pid=profile.run.pid,
        profile=path,
        step_ms=as_number(metrics.get("step_ms")),
        img_per_s=as_number(metrics.get("img_per_s")),
        phase_ms={name: float(ms) for name, ms in phases.items()},
        comm_ms=as_number(metrics.get("comm_ms")),
        wait_ms=_waits(profile),
        comm_exposed_pct=as_number(metrics.get("comm_exposed_pct")),
        peak_rss_mb=as_number(metrics.get("peak_rss_mb")),
        peak_vram_mb=as_number(metrics.get("peak_vram_mb")),
        contended=contended if isinstance(contended := metrics.get("contended"), bool) else None,
        cpus_used=None if (used := cpus_used(profile)) is None else round(used, 2),
    )


def _waits(profile: Profile) -> dict[str, float]:
    trace = profile.trace
    if trace is None or not trace.host_comm_exposed_ms:
        return {}
    n = per_step_divisor(trace)
    return {phase: round(ms / n, 3) for phase, ms in trace.host_comm_exposed_ms.items()}


def own_phase_ms(record: RankRecord) -> dict[str, float]:
    """The rank's phases per step less the collective wait inside each: measured by phase
    where the trace splits it, else (GPU collectives) all of it taken from backward, where
    DDP waits for its last bucket."""
    waits = record.wait_ms or {BACKWARD: exposed_ms(record) or 0.0}
    return {phase: max(ms - waits.get(phase, 0.0), 0.0) for phase, ms in record.phase_ms.items()}


def exposed_ms(record: RankRecord) -> float | None:
    """The rank's collective time per step that nothing computed beside; None unknown."""
    if record.comm_ms is None:
        return None
    return record.comm_ms * (record.comm_exposed_pct or 0.0) / 100.0


def own_ms(record: RankRecord) -> float | None:
    """The rank's step less its exposed collective wait."""
    if record.step_ms is None:
        return None
    return record.step_ms - (exposed_ms(record) or 0.0)


def world_metrics(world: World, *, measured_steps: int) -> dict[str, Scalar]:
    """The world's keys (`KEYS`): global throughput (the slowest rank's step sets the
    world's pace), the own-work skew, the straggler and its cause (named over at least
    MIN_STRAGGLER_STEPS measured steps), and the least exposure."""
    ranks = world.ranks
    steps = [r.step_ms for r in ranks if r.step_ms]
    own = {r.rank: ms for r in ranks if (ms := own_ms(r)) is not None and ms > 0}
    waits = [ms for r in ranks if (ms := exposed_ms(r)) is not None]
    metrics: dict[str, Scalar] = dict.fromkeys(KEYS)
    metrics |= {"world_size": world.world_size, "global_batch": world.global_batch}
    if len(steps) == len(ranks) and steps:
        metrics["global_img_per_s"] = round(world.global_batch * 1000.0 / max(steps), 2)
    if len(own) == len(ranks) and len(own) >= 2:
        slowest = max(own, key=own.__getitem__)
        skew = 100.0 * (own[slowest] / min(own.values()) - 1.0)
        metrics["rank_skew_pct"] = round(skew, 1)
        # A rank that waited for a CPU is slow for another process's sake: no straggler.
        quiet = not any(r.contended for r in ranks)
        if skew >= STRAGGLER_SKEW_PCT and quiet and measured_steps >= MIN_STRAGGLER_STEPS:
            cause, excess = _cause(ranks, slowest)
            metrics |= {
                "straggler_rank": slowest,
                "straggler_cause": cause,
                "straggler_excess_ms": excess,
            }
    if len(waits) == len(ranks) and waits:
        metrics["comm_wait_ms"] = round(min(waits), 3)
    return metrics


def _cause(ranks: list[RankRecord], slowest: int) -> tuple[str | None, float | None]:
    """The phase where the straggler's own time exceeds the other ranks' median most, and by
    how many ms per step; (None, None) where no phase does."""

    straggler = next(r for r in ranks if r.rank == slowest)
    others = [own_phase_ms(r) for r in ranks if r.rank != slowest]
    excess = {
        phase: ms - statistics.median(other[phase] for other in others)
        for phase, ms in own_phase_ms(straggler).items()
        if all(phase in other for other in others)
    }
    if not excess or max(excess.values()) <= 0:
        return None, None
    phase = max(excess, key=excess.__getitem__)
    return phase, round(excess[phase], 2)


def world_verdict(profile: Profile, metrics: dict[str, Scalar], verdict: Verdict) -> Verdict:
    """`straggler` or `communication` in place of the rank's own `verdict` where the world's
    numbers say so (see the module docstring); `verdict` otherwise."""
    world = profile.world
    if world is None or verdict.bound in ("contended", SUSPECT):
        return verdict
    straggler = metrics.get("straggler_rank")
    if isinstance(straggler, int):
        return _straggler(world, metrics, straggler)
    wait, step = metrics.get("comm_wait_ms"), metrics.get("step_ms")
    if not (isinstance(wait, float) and isinstance(step, float) and step > 0):
        return verdict
    if wait / step >= COMM_SHARE_BOUND:
        why = (
            f"every rank waits ≥ {wait:.1f} ms per step ({100 * wait / step:.0f}% of the step) "
            "in collectives nothing computes beside"
        )
        return Verdict(
            bound="communication",
            why=why,
            evidence={"comm_wait_ms": wait, "step_ms": step, "world_size": world.world_size},
            levers=list(COMM_LEVERS),
        )
    return verdict


def _straggler(world: World, metrics: dict[str, Scalar], rank: int) -> Verdict:
    cause = metrics.get("straggler_cause")
    skew = metrics.get("rank_skew_pct")
    excess = metrics.get("straggler_excess_ms")
    why = (
        f"rank {rank}'s own work (its step less its collective wait) is {skew}% above the "
        "fastest rank's"
    )
    if isinstance(cause, str):
        why += f"; its {cause} takes {excess} ms per step more than the other ranks'"
    why += ", and every other rank waits for it in the gradient all-reduce"
    kind = cause if cause in (DATALOAD, TO_DEVICE) else "compute"
    return Verdict(
        bound="straggler",
        why=why,
        evidence={
            "straggler_rank": rank,
            "straggler_cause": cause,
            "rank_skew_pct": skew,
            "world_size": world.world_size,
        },
        levers=list(CAUSE_LEVERS[kind]),
    )
