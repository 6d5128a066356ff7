"""CPU contention: did the measured threads get the CPUs they asked for? Pure.

The evidence is the host record the collector sampled (`Profile.host`, from per-thread
schedstat): the time the sampled threads spent runnable but queued for a CPU, against the time
they ran. A thread that loses its CPU stalls every parallel region it belongs to, so every op of
a contended step looks slow and any bottleneck read from its timings may be an artefact. A
contended window's verdict is `contended`; what the same numbers would say on a quiet host is
kept beside it (`Verdict.quiet_bound`).
"""

from __future__ import annotations

import msgspec

from libreyolo.document.model import Host, Profile, Scalar, StepSample

# A fifth of the runnable time spent queued inflates a CPU-bound step by at least a quarter
# (wall ≥ run + wait) and is far above a quiet host: the collectors measure under 5 % on an
# idle 2-core VM, where the main thread, the intra-op pool and the sampler share the CPUs.
CPU_WAIT_FRAC_CONTENDED = 0.2
# A hypervisor that takes a tenth of the host's CPU time shares it with other tenants: the
# guest cannot see that time at all except as steal, and timings drift with their load.
STEAL_FRAC_CONTENDED = 0.1
TOP_STEPS = 3  # the steps hit hardest that `summary` names

LEVERS = [
    "stop the other work on this machine",
    "--threads N below the usable CPUs",
    "fewer --workers",
    "pin the run with taskset -c",
]
UNKNOWN = "contention unknown: this profile has no host samples (older file or a bare trace)"
UNMEASURABLE = "contention not measurable: this platform has no per-thread schedstat (/proc)"


def _ratio(part: float | None, whole: float | None) -> float | None:
    if part is None or whole is None or whole <= 0:
        return None
    return part / whole


def cpu_wait_frac(host: Host | None) -> float | None:
    """Run-queue wait over (wait + on-CPU time), summed over the sampled threads."""
    if host is None or not host.measurable or host.cpu_ms is None or host.cpu_wait_ms is None:
        return None
    return _ratio(host.cpu_wait_ms, host.cpu_wait_ms + host.cpu_ms)


def _sampled_steps(profile: Profile) -> list[StepSample]:
    return [s for s in profile.samples.steps if s.cpu_wait_ms is not None]


def host_metrics(profile: Profile) -> dict[str, Scalar]:
    """`cpu_wait_frac`, `steal_frac`, `cpu_wait_ms_per_step` and `contended` (null when the
    profile holds no host samples or the platform could not give them)."""
    host = profile.host
    wait = cpu_wait_frac(host)
    steal = host.steal_frac if host is not None else None
    steps = _sampled_steps(profile)
    per_step = None
    if host is not None and host.cpu_wait_ms is not None and steps:
        per_step = round(host.cpu_wait_ms / len(steps), 3)
    contended = None
    if wait is not None:
        contended = wait >= CPU_WAIT_FRAC_CONTENDED or (steal or 0.0) >= STEAL_FRAC_CONTENDED
    return {
        "cpu_wait_frac": None if wait is None else round(wait, 3),
        "steal_frac": None if steal is None else round(steal, 3),
        "cpu_wait_ms_per_step": per_step,
        "contended": contended,
    }


def state(profile: Profile) -> str | None:
    """One line for a profile whose contention cannot be judged, else None."""
    if profile.host is None:
        return UNKNOWN
    if not profile.host.measurable:
        return UNMEASURABLE
    return None


def cpus_used(profile: Profile) -> float | None:
    """CPUs the sampled threads kept busy on average over the measured steps' wall time."""
    host = profile.host
    steps = _sampled_steps(profile)
    wall = sum(s.wall_ms for s in steps)
    return _ratio(host.cpu_ms if host is not None else None, wall)


def reason(profile: Profile, metrics: dict[str, Scalar]) -> tuple[str, dict[str, Scalar]]:
    """Why the window is contended, in numbers, and the evidence behind it."""
    host = profile.host
    assert host is not None  # only called when `contended` is true, which needs a host
    wait, steal = metrics.get("cpu_wait_frac"), metrics.get("steal_frac")
    parts = []
    if isinstance(wait, float):
        parts.append(f"threads waited {wait:.0%} of their runnable time for a CPU")
    if host.runnable_avg is not None and host.usable_cpus:
        parts.append(f"{host.runnable_avg:.1f} runnable tasks for {host.usable_cpus} CPUs")
    elif host.load_avg_1m is not None and host.usable_cpus:
        parts.append(f"load {host.load_avg_1m:.1f} on {host.usable_cpus} CPUs")
    if isinstance(steal, float) and steal >= STEAL_FRAC_CONTENDED:
        parts.append(f"the hypervisor stole {steal:.0%} of the host's CPU time")
    used = cpus_used(profile)
    world = profile.world
    ranks = [r.cpus_used for r in world.ranks] if world and world.launcher == "spawn" else []
    if ranks and all(r is not None for r in ranks) and host.usable_cpus:
        # ranks this tool started share the host: their threads (gloo's too) are the run's own
        used = sum(r for r in ranks if r is not None)
        whose = (
            "their threads (gloo's among them) oversubscribe them"
            if used >= 0.8 * host.usable_cpus
            else "other processes held the rest"
        )
        parts.append(
            f"the {len(ranks)} ranks kept {used:.1f} of {host.usable_cpus} CPUs busy: {whose}"
        )
    elif used is not None and host.usable_cpus:
        whose = (
            "its own threads and workers oversubscribe them"
            if used >= 0.8 * host.usable_cpus
            else "other processes held the rest"
        )
        parts.append(f"this run kept {used:.1f} of {host.usable_cpus} CPUs busy: {whose}")
    evidence: dict[str, Scalar] = {
        "cpu_wait_frac": wait,
        "steal_frac": steal,
        "load_avg_1m": host.load_avg_1m,
        "runnable_avg": host.runnable_avg,
        "usable_cpus": host.usable_cpus,
        "cpus_used": None if used is None else round(used, 2),
    }
    return "; ".join(parts), evidence


class StepWait(msgspec.Struct, frozen=True):
    """One measured step's share of runnable time spent queued for a CPU."""

    index: int
    synced: bool
    wall_ms: float
    cpu_ms: float
    cpu_wait_ms: float
    cpu_wait_frac: float


def step_waits(profile: Profile) -> tuple[StepWait, ...]:
    """Every sampled step's wait, in step order (unsynced half first, as stored)."""
    rows = []
    for s in _sampled_steps(profile):
        cpu, wait = s.cpu_ms or 0.0, s.cpu_wait_ms or 0.0
        frac = _ratio(wait, wait + cpu) or 0.0
        rows.append(StepWait(s.index, s.synced, s.wall_ms, cpu, wait, round(frac, 3)))
    return tuple(rows)


def hardest_hit(profile: Profile, top: int = TOP_STEPS) -> tuple[StepWait, ...]:
    """The `top` steps with the largest wait share (ties: the longer wait first)."""
    ranked = sorted(step_waits(profile), key=lambda r: (-r.cpu_wait_frac, -r.cpu_wait_ms))
    return tuple(r for r in ranked[:top] if r.cpu_wait_ms > 0)
