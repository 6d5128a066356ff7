"""The world profile of a multi-process run: rank 0's profile with every rank's record.

Pure. Rank 0's profile is the world's base (its trace is the one `kernels`, `ops` and the
report read without `--rank`); `World` adds each rank's figures, and `finalize` derives the
world's metrics and verdict from them (`analysis/world.py`). The trace it names is rank 0's,
in rank 0's folder.
"""

from __future__ import annotations

import msgspec.structs

from libreyolo.analysis.build import finalize
from libreyolo.analysis.world import rank_record
from libreyolo.document.model import Artifacts, Profile
from libreyolo.document.world import RANK_FOLDER, World, rank_profile


def world_profile(
    ranks: list[Profile],
    *,
    backend: str,
    launcher: str,
    global_batch: int,
) -> Profile:
    """The world profile of `ranks` (in rank order, each saved as `rank_profile(rank)`)."""
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
            rank_record(rank, profile, rank_profile(rank)) for rank, profile in enumerate(ranks)
        ],
    )
    trace = base.artifacts.trace
    artifacts = Artifacts(trace=f"{RANK_FOLDER.format(rank=0)}/{trace}" if trace else None)
    return finalize(msgspec.structs.replace(base, world=world, artifacts=artifacts))
