"""The CPU threads a measurement runs with: `--threads`, and a warning when they crowd the CPUs.

Role: set torch's intra-op thread count for the length of one measurement and put the caller's
back afterwards (in-process callers: tests, sweeps with `sweep.isolate: false`); say, in one
line, when the threads a run will use want more CPUs than this process may run on, since they
then wait for each other and every timing grows; refuse a count so far beyond those CPUs that
the run would measure the scheduler only. Without `--threads`, a training run takes the count
libreyolo 1.6.0's trainer takes (`training/cpu_threads.py`, from `BaseTrainer.train`): torch's
own, lowered to the CPUs the process may use (its affinity mask and its cgroup CPU quota) unless
OMP_NUM_THREADS is set. Must not print (the caller's warnings handler shows the line).
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import torch

from libreyolo.errors import UsageError
from libreyolo.measure.host import usable_cpus

# `--threads` may ask for at most this many intra-op threads per usable CPU. Oversubscription
# studies are legitimate up to a point (2-4x shows how a crowded host slows the step, and the
# crowding warning below already says when threads + workers outnumber the CPUs); far beyond
# it every op starts and joins thousands of OpenMP threads, and a run of under a second takes
# minutes while measuring nothing but the scheduler.
MAX_THREADS_PER_CPU = 4
CGROUP_ROOT = Path("/sys/fs/cgroup")


@contextlib.contextmanager
def intra_op_threads(threads: int | None) -> Iterator[None]:
    """torch runs with `threads` intra-op threads inside the block (None: leave torch's own)."""
    if threads is None:
        yield
        return
    if threads < 1:
        raise UsageError(f"--threads must be 1 or more; got {threads}")
    check_thread_count(threads, usable_cpus())
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def training_threads(notes: list[str], cgroup_root: Path = CGROUP_ROOT) -> int | None:
    """The intra-op threads 1.6.0's `libreyolo train` would run with here, when that is fewer
    than torch's own count (a note in `notes` says so); None: torch's own count stands."""
    if os.environ.get("OMP_NUM_THREADS"):
        return None  # the user's choice, as 1.6.0 leaves it
    quota = cpu_quota(cgroup_root)
    usable = usable_cpus() if quota is None else min(usable_cpus(), quota)
    ranks = local_ranks()  # 1.6.0 splits them between the ranks on this machine
    usable = max(1, usable // ranks)
    current = torch.get_num_threads()
    if current <= usable:
        return None
    share = "the CPUs this process may use" if ranks == 1 else f"its share of {ranks} local ranks"
    notes.append(
        f"CPU threads lowered from torch's {current} to {usable}, {share}, "
        "as libreyolo 1.6.0's trainer does (--threads N to choose)"
    )
    return usable


def local_ranks() -> int:
    """Ranks on this machine, as 1.6.0 reads them: torchrun's LOCAL_WORLD_SIZE, else
    WORLD_SIZE (its own spawn sets only that), else 1."""
    text = os.environ.get("LOCAL_WORLD_SIZE") or os.environ.get("WORLD_SIZE") or "1"
    try:
        return max(1, int(text))
    except ValueError:
        return 1


def cpu_quota(cgroup_root: Path = CGROUP_ROOT) -> int | None:
    """The CPUs a cgroup CPU limit lets this process use per period (rounded up), or None when
    no limit is set or readable (v2 `cpu.max`: "<quota> <period>" or "max <period>"; v1
    `cpu/cpu.cfs_quota_us` and `cpu.cfs_period_us`, -1 for none)."""
    with contextlib.suppress(OSError, ValueError):
        quota, period = (cgroup_root / "cpu.max").read_text().split()[:2]
        if quota != "max":
            return _cpus(int(quota), int(period))
        return None
    with contextlib.suppress(OSError, ValueError):
        v1 = cgroup_root / "cpu"
        quota_us = int((v1 / "cpu.cfs_quota_us").read_text())
        return _cpus(quota_us, int((v1 / "cpu.cfs_period_us").read_text()))
    return None


def _cpus(quota: int, period: int) -> int | None:
    return max(1, math.ceil(quota / period)) if quota > 0 and period > 0 else None


def check_thread_count(threads: int, num_usable_cpus: int) -> None:
    """UsageError when `threads` exceeds MAX_THREADS_PER_CPU x the CPUs this process may use."""
    most = MAX_THREADS_PER_CPU * num_usable_cpus
    if threads > most:
        raise UsageError(
            f"--threads {threads} exceeds {MAX_THREADS_PER_CPU} threads for each of the "
            f"{num_usable_cpus} CPUs this process may use",
            hint=f"use --threads {most} or fewer",
        )


def warn_if_crowded(num_workers: int, device: torch.device, notes: list[str]) -> None:
    """A warning (and a note in `notes`, so the profile says it too) when torch's current
    intra-op threads and `num_workers` crowd the usable CPUs; nothing otherwise."""
    text = crowding_warning(
        torch.get_num_threads(), num_workers, usable_cpus(), on_cpu=device.type == "cpu"
    )
    if text is not None:
        notes.append(text)
        warnings.warn(text, UserWarning, stacklevel=2)


def crowding_warning(
    num_threads: int, num_workers: int, num_usable_cpus: int, *, on_cpu: bool
) -> str | None:
    """One line when the run's busy threads outnumber `num_usable_cpus`, else None.

    On a CPU device the intra-op pool does the math, so its threads count; on an accelerator it
    mostly waits, and only the main thread counts. DataLoader workers are processes of their
    own, one CPU each.
    """
    wanted = (num_threads if on_cpu else 1) + num_workers
    if wanted <= num_usable_cpus:
        return None
    parts = [_count(num_threads, "intra-op thread") if on_cpu else "the main thread"]
    levers = ["--threads"] if on_cpu else []
    if num_workers:
        parts.append(_count(num_workers, "DataLoader worker"))
        levers.insert(0, "--workers")
    return (
        f"{' + '.join(parts)} want {wanted} CPUs but this process may use {num_usable_cpus}: "
        f"they will wait for each other (lower {' or '.join(levers)})"
    )


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'' if number == 1 else 's'}"
