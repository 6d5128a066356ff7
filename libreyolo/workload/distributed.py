"""What libreyolo 1.6.0's trainer does differently on several ranks, for our training step.

Role: under an initialised process group of two or more ranks, 1.6.0 converts BatchNorm to
SyncBatchNorm where the family asks for it (YOLOv9 and YOLOX do; CUDA only: DDP refuses
SyncBatchNorm on CPU modules), wraps the model in DistributedDataParallel after the optimizer
is built (`find_unused_parameters=False`, `static_graph=True`, `gradient_as_bucket_view=False`),
divides each loss by the global positive count (`all_reduce` of the local count, then
`/ world_size`: one collective per step), and gives each rank a `DistributedSampler` shard.
`distribute` does the first two to a built step; `global_count` is the loss's normaliser; one
rank alone (or no process group) changes nothing.

Must not: start or join a process group (the measuring side does), print, or time anything.
"""

from __future__ import annotations

from collections.abc import Sized
from typing import Protocol

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.utils.data.distributed import DistributedSampler

# What 1.6.0's `BaseTrainer._ddp_kwargs` gives DDP for YOLOv9 and YOLOX.
FIND_UNUSED_PARAMETERS = False
STATIC_GRAPH = True
GRADIENT_AS_BUCKET_VIEW = False


def world_size() -> int:
    """Ranks in the default process group; 1 without one."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    """This process's rank in the default process group; 0 without one."""
    return dist.get_rank() if world_size() > 1 else 0


def shard(dataset: Sized, seed: int) -> DistributedSampler[int]:
    """This rank's share of `dataset`, as 1.6.0's trainer draws it: shuffled, and the ragged
    end dropped when every rank can have an image."""
    ranks = world_size()
    return DistributedSampler(
        dataset,  # type: ignore[arg-type]
        num_replicas=ranks,
        rank=rank(),
        shuffle=True,
        seed=seed,
        drop_last=len(dataset) >= ranks,
    )


def global_count(local: Tensor) -> Tensor:
    """1.6.0's loss normaliser: max(count, 1) alone; on several ranks the global count's mean,
    max(sum over ranks, 1) / world_size (`all_reduce_avg_scalar_tensor`)."""
    count = local.detach().float().sum().reshape(())
    ranks = world_size()
    if ranks == 1:
        return count.clamp_min(1.0)
    dist.all_reduce(count)
    return count.clamp_min(1.0) / float(ranks)


class Distributable(Protocol):
    """A training step whose forward runs `forward_model` (the model itself until wrapped)."""

    model: nn.Module
    forward_model: nn.Module
    device: torch.device


def distribute(step: Distributable, *, sync_bn: bool) -> list[str]:
    """`step` made a rank of the world, as 1.6.0's trainer makes one: SyncBatchNorm (with
    `sync_bn`, on CUDA) and DDP around the model its forward runs. The parameters stay the
    same objects, so the optimizer and EMA built on them are unchanged. Returns notes."""
    if world_size() == 1:
        return []
    notes = []
    model = step.model
    if sync_bn and step.device.type == "cuda":
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        step.model = model
    elif sync_bn:
        notes.append(
            "BatchNorm not synchronised across ranks: DDP runs SyncBatchNorm on CUDA only, "
            "where 1.6.0's trainer converts it (on the CPU it refuses the run)"
        )
    index = step.device.index if step.device.type == "cuda" else None
    step.forward_model = nn.parallel.DistributedDataParallel(
        model,
        device_ids=None if index is None else [index],
        output_device=index,
        find_unused_parameters=FIND_UNUSED_PARAMETERS,
        static_graph=STATIC_GRAPH,
        gradient_as_bucket_view=GRADIENT_AS_BUCKET_VIEW,
    )
    return notes
