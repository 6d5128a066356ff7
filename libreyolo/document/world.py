"""The world of a multi-process training run: its ranks, as the world profile records them.

A run on N ranks (`--nproc N`, `--device 0,1`, or a `torchrun` world it joined) writes one
profile per rank (`rank<i>/profile.json` and its trace, in the same set) and the world profile
(`profile.json`): rank 0's own profile with this section added. Each `RankRecord` holds what
the world's readers compare across ranks; the rank's whole profile is the file it names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import msgspec

RANK_FOLDER = "rank{rank}"  # inside the set, beside the world profile


def rank_profile(rank: int) -> str:
    """Rank `rank`'s profile, relative to the world profile (the one path a record names)."""
    return f"{RANK_FOLDER.format(rank=rank)}/profile.json"


class RankRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One rank's figures per measured step (medians where the profile has samples)."""

    rank: int
    device: str
    pid: int | None = None
    profile: str  # the rank's whole profile, relative to the world profile's folder
    step_ms: float | None = None
    img_per_s: float | None = None  # this rank's images per second
    # Wall time per step by phase (dataload, to_device, forward, backward, optimizer).
    phase_ms: dict[str, float] = msgspec.field(default_factory=dict)
    comm_ms: float | None = None  # collective time per step (see `comm_exposed_pct`)
    comm_exposed_pct: float | None = None  # of it, the share nothing computed beside
    # That exposed wait per step by the phase it fell in (host collectives: gloo); empty where
    # the trace does not split it (GPU collectives).
    wait_ms: dict[str, float] = msgspec.field(default_factory=dict)
    peak_rss_mb: float | None = None
    peak_vram_mb: float | None = None
    contended: bool | None = None
    # CPUs the rank's sampled threads kept busy over its measured steps (`contention.cpus_used`)
    cpus_used: float | None = None


class World(msgspec.Struct, frozen=True, kw_only=True):
    """How the ranks ran: `global_batch` is `libreyolo train`'s `batch`, split evenly
    (`batch_per_rank` each); `sync_bn`: BatchNorm synchronised across ranks."""

    world_size: int
    backend: str  # gloo | nccl
    launcher: Literal["spawn", "torchrun"]
    global_batch: int
    batch_per_rank: int
    sync_bn: bool
    ranks: list[RankRecord] = msgspec.field(default_factory=list)


def largest_rank_value(profile: Mapping[str, object], key: str) -> float | None:
    """The largest of a world profile's ranks' `key` (`peak_rss_mb`: a memory budget holds for
    each rank), read from its JSON; None where it has no ranks or one of them lacks a number."""
    world = profile.get("world")
    ranks = world.get("ranks") if isinstance(world, dict) else None
    if not isinstance(ranks, list) or not ranks:
        return None
    values = [rank.get(key) if isinstance(rank, dict) else None for rank in ranks]
    numbers = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return max(numbers) if len(numbers) == len(values) else None
