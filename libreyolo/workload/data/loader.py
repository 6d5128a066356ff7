"""The collate function and the DataLoader of the training workload.

Role: stack a list of `Sample`s into one `Batch` and build the torch DataLoader around a
YoloDataset. The Batch is the contract the loss and the training step are written against:

    Batch.images   float32 (B, 3, H, W), values in [0, 1], RGB, H = W = imgsz (letterboxed,
                   pad value 114/255). On CPU; pinned when the loader pins memory.
    Batch.targets  float32 (N, 6); one row per real box in the batch, rows (image_index, class,
                   x1, y1, x2, y2). image_index is the position 0..B-1 of the image in `images`;
                   class is the integer class id stored as float; x1 y1 x2 y2 are corners in
                   pixels of the network input (0..W, 0..H), clipped, with x2 > x1 and y2 > y1.
                   Rows are grouped by image_index in ascending order. N may be 0. There are NO
                   padding rows (1.6.0 padded to (B, 300, 5) normalised; on YOLOv9-t at batch 2
                   the loss took 0.44-0.58 s padded against 0.03 s trimmed, same value). A loss
                   that wants 1.6.0's dense form builds it from these rows, padding to the
                   batch's own maximum box count.
    Batch.paths    list[str] of length B, the source image of each (first mosaic tile).
    Batch.padded_targets  None, or the same boxes grouped per image as a float32 (B, T, 5)
                   [class, x1, y1, x2, y2] tensor padded with class -1 rows (T: the batch's
                   largest count), for a loss that wants the dense form (YOLOv9's). Made in the
                   family's collate, i.e. in a loader worker, so the loader pins it with the
                   images and its copy to the device is truly asynchronous.

Must not: decode, augment, move tensors to a device, or read any configuration.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sized
from typing import Any, NamedTuple

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from libreyolo.errors import UsageError
from libreyolo.workload.data.dataset import Sample, YoloDataset
from libreyolo.workload.data.dataset_config import DatasetSpec

__all__ = ["PREFETCH_FACTOR", "Batch", "batches_available", "build_loader", "collate"]

# Batches each worker keeps loaded ahead (torch's default, named so the host-memory check
# counts the same number of batches in flight as the loader holds).
PREFETCH_FACTOR = 2


class Batch(NamedTuple):
    """One training batch; see the module docstring for the exact contract."""

    images: torch.Tensor
    targets: torch.Tensor
    paths: list[str]
    padded_targets: torch.Tensor | None = None


def collate(samples: list[Sample]) -> Batch:
    """Stack samples: images to float32 in [0, 1], boxes to (image, class, x1, y1, x2, y2) rows."""
    if not samples:
        raise ValueError("cannot collate an empty batch")
    images = torch.stack([s.image for s in samples]).float().div_(255.0)
    rows = [
        torch.cat(
            (
                torch.full((len(s.boxes), 1), float(i)),
                s.classes.to(torch.float32).view(-1, 1),
                s.boxes.to(torch.float32).view(-1, 4),
            ),
            dim=1,
        )
        for i, s in enumerate(samples)
    ]
    return Batch(images, torch.cat(rows), [s.path for s in samples])


def pins_for(device: torch.device | None) -> bool:
    """Whether batches bound for `device` should come from pinned memory: only for CUDA."""
    return device is not None and device.type == "cuda"


def build_loader(
    dataset: YoloDataset | Dataset[Any],
    *,
    batch: int,
    workers: int,
    shuffle: bool = True,
    pin_memory: bool | None = None,
    device: torch.device | None = None,
    persistent_workers: bool | None = None,
    drop_last: bool | None = None,
    multiprocessing_context: str | None = None,
    seed: int | None = None,
    collate_fn: Callable[[list[Any]], Any] | None = None,
    sampler: Sampler[int] | None = None,
) -> DataLoader[Any]:
    """A DataLoader yielding `Batch`es (or what `collate_fn`, a family's own collate, makes).

    Args:
        pin_memory: None pins only when `device` (the measured device) is CUDA: pinning for a
            CPU run would start a CUDA context on GPU 0 from the pin thread and put the copy
            into `dataload`.
        device: the device the batches go to; None (unknown) never pins.
        persistent_workers: None keeps workers alive across epochs whenever workers > 0; 1.6.0
            respawned them every epoch, which stalls the first batch of each epoch.
        drop_last: None drops the ragged last batch only when the dataset holds a full batch
            (1.6.0's rule), so a dataset smaller than the batch still yields one batch.
        multiprocessing_context: "fork", "spawn" or "forkserver"; None is Python's default. Pass
            it explicitly under launchers that change the default (the dataset is picklable).
        seed: seeds the shuffle order, for reproducible tests.
        collate_fn: how samples become a Batch; the default is `collate` (the contract above).
            A family with another input contract passes its own (YOLOX: `yolox.data.collate`).
        sampler: which samples, in which order (a rank's shard: `distributed.shard`); it
            shuffles, so `shuffle` and `seed` are not used with it.
    """
    if batch < 1:
        raise UsageError(f"batch size must be at least 1, got {batch}")
    if workers < 0:
        raise UsageError(f"workers must be 0 or more, got {workers}")
    if pin_memory is None:
        pin_memory = pins_for(device)
    if persistent_workers is None:
        persistent_workers = workers > 0
    if drop_last is None:  # 1.6.0's rule, on what each epoch draws
        drawn = sampler if sampler is not None else dataset
        drop_last = len(drawn) >= batch  # type: ignore[arg-type]
    generator = torch.Generator().manual_seed(seed) if seed is not None else None
    if sampler is not None:
        shuffle, generator = False, None
    return DataLoader(
        dataset,
        batch_size=batch,
        shuffle=shuffle,
        sampler=sampler,
        num_workers=workers,
        collate_fn=collate_fn or collate,
        pin_memory=pin_memory,
        persistent_workers=persistent_workers and workers > 0,  # torch refuses it with 0 workers
        drop_last=drop_last,
        multiprocessing_context=multiprocessing_context if workers > 0 else None,
        generator=generator,
        prefetch_factor=PREFETCH_FACTOR if workers > 0 else None,  # torch refuses it with 0
    )


def batches_available(spec: DatasetSpec | Sized, batch: int, drop_last: bool | None = None) -> int:
    """Batches one epoch yields for `spec` (or a dataset) at this batch size.

    Use it before measuring to tell the user whether warmup + steps fit in one epoch. With a
    DatasetSpec the count is an upper bound when files will be skipped; pass the YoloDataset for
    the exact number. drop_last None follows build_loader's default rule.
    """
    if batch < 1:
        raise UsageError(f"batch size must be at least 1, got {batch}")
    size = spec.num_images if isinstance(spec, DatasetSpec) else len(spec)
    if drop_last is None:
        drop_last = size >= batch
    return size // batch if drop_last else math.ceil(size / batch)


def worker_pids(loader: DataLoader[Any]) -> list[int]:
    """The pids of a loader's worker processes; [] with no workers or before its first epoch.

    torch names them only on its private iterator (`_workers`, unchanged since 1.x), which a
    loader keeps as `_iterator` with persistent workers, as `build_loader` makes them.
    """
    workers = getattr(getattr(loader, "_iterator", None), "_workers", None) or []
    return [pid for pid in (getattr(w, "pid", None) for w in workers) if isinstance(pid, int)]
