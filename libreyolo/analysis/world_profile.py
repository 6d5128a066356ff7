"""The world profile of a multi-process run: rank 0's profile with every rank's record.

Pure. Rank 0's profile is the world's base (its trace is the one `kernels`, `ops` and the
report read without `--rank`); `World` adds each rank's figures, and `finalize` derives the
world's metrics and verdict from them (`analysis/world.py`). The trace it names is rank 0's,
in rank 0's folder.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec.structs

from libreyolo.analysis.build import finalize
from libreyolo.analysis.world import rank_record
from libreyolo.document.model import Artifacts, Profile
from libreyolo.document.world import World

PROFILE_FILE = "profile.json"


def world_profile(
    ranks: Sequence[Profile],
    folders: Sequence[str],
    *,
    backend: str,
    launcher: str,
    global_batch: int,
) -> Profile:
    """The world profile of `ranks` (in rank order, each saved in its folder of `folders`)."""
    base = ranks[0]
    world = World(
        world_size=len(ranks),
        backend=backend,
        launcher=launcher,  # type: ignore[arg-type]
        global_batch=global_batch,
        batch_per_rank=base.run.batch or global_batch // len(ranks),
        # Both built-in families sync BatchNorm, where DDP can: on CUDA (`distribute`).
        sync_bn=(base.run.device or "").startswith("cuda"),
        ranks=[
            rank_record(rank, profile, f"{folder}/{PROFILE_FILE}")
            for rank, (profile, folder) in enumerate(zip(ranks, folders, strict=True))
        ],
    )
    trace = base.artifacts.trace
    artifacts = Artifacts(trace=f"{folders[0]}/{trace}" if trace else None)
    return finalize(msgspec.structs.replace(base, world=world, artifacts=artifacts))
