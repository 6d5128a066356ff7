"""YOLOX as a `Workload`: the model, its 1.6.0 checkpoints, predict path, SimOTA training step
and augmentations.

Role: the adapter the registry hands to the collectors; every method delegates to the YOLOX
modules. YOLOX has no fusion the profiler applies (1.6.0 measures it as loaded), so
`fuse_modes` is empty and a measurement says so in a note.
Must not: hold state between calls, or change what the delegated modules do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import torch
from PIL import Image
from torch import nn
from torch.utils.data import Dataset

from libreyolo.errors import CheckpointError, UsageError
from libreyolo.workload.checkpoint_io import state_dict_of
from libreyolo.workload.data.augment import with_keys
from libreyolo.workload.data.dataset_config import DatasetSpec
from libreyolo.workload.data.loader import Batch
from libreyolo.workload.data.probe import grid_boxes
from libreyolo.workload.family import (
    FAITHFUL,
    Description,
    InferRunner,
    InferStages,
    TrainOptions,
    TrainRunner,
)
from libreyolo.workload.infer import InferStep
from libreyolo.workload.train import (
    CHANNELS_LAST,
    FOREACH_UPDATES,
    TRIMMED_TARGETS,
    VECTORISED_ASSIGNER,
)
from libreyolo.workload.yolo9.checkpoint import size_from_filename
from libreyolo.workload.yolox import checkpoint, predict
from libreyolo.workload.yolox.data import (
    MAX_LABELS,
    YOLOX_AUGMENT,
    YOLOXDataset,
    collate,
    xyxy_to_cxcywh,
)
from libreyolo.workload.yolox.model import SIZES, YOLOX
from libreyolo.workload.yolox.train import YOLOXTrainStep


class YOLOXWorkload:
    """The YOLOX family (n/t/s/m/l/x)."""

    name = "yolox"
    sizes: tuple[str, ...] = tuple(SIZES)
    default_size = "s"
    stride = predict.STRIDE
    fuse_modes: tuple[str, ...] = ()

    def default_imgsz(self, size: str) -> int:
        return (
            SIZES[size].default_imgsz if size in SIZES else SIZES[self.default_size].default_imgsz
        )

    def model_name(self, size: str) -> str:
        return f"LibreYOLOX{size}"

    def claims_name(self, stem: str) -> str | None:
        return size_from_filename(f"{stem}.pt", self.name)

    def detect(self, ckpt: Mapping[str, Any]) -> tuple[str | None, int | None] | None:
        try:
            found = checkpoint.detect(state_dict_of(dict(ckpt), "checkpoint"))
        except CheckpointError:  # no weights at all: not ours to claim
            return None
        return None if found is None else (found[1], found[2])

    def build(self, size: str, nc: int, *, for_training: bool) -> nn.Module:
        return YOLOX(size, nc)

    def load(
        self, path: str | os.PathLike[str], *, size: str | None, device: str | torch.device
    ) -> nn.Module:
        return checkpoint.load_checkpoint(path, size=size, device=device)

    def describe(self, model: nn.Module) -> Description:
        yolox = cast(YOLOX, model)
        num_params = sum(p.numel() for p in yolox.parameters())
        return Description(self.name, yolox.size, yolox.nc, dict(yolox.names), num_params)

    def reset_classes(self, model: nn.Module, nc: int, names: dict[int, str]) -> None:
        cast(YOLOX, model).reset_classes(nc, names)

    def fuse(self, model: nn.Module, mode: str) -> nn.Module:
        return model  # fuse_modes is empty: the collectors never ask

    def infer_step(
        self,
        model: nn.Module,
        images: Sequence[Image.Image],
        paths: Sequence[Path],
        **settings: Any,
    ) -> InferRunner:
        """The shared InferStep over this family's stages (settings as `Workload.infer_step`)."""
        return InferStep(
            model,
            images,
            paths,
            stages=InferStages(predict.preprocess, predict.postprocess),
            **settings,
        )

    def train_step(
        self,
        model: nn.Module,
        *,
        device: torch.device,
        amp: bool,
        ema: bool = True,
        channels_last: bool = False,
        options: TrainOptions = FAITHFUL,
    ) -> TrainRunner:
        if options.max_labels not in (None, MAX_LABELS):
            raise UsageError(
                f"--max-labels {options.max_labels}: libreyolo 1.6.0's YOLOX keeps {MAX_LABELS} "
                "target rows per image whatever its config says (TrainTransform(max_labels=50))",
                hint="drop --max-labels for yolox",
            )
        if TRIMMED_TARGETS in options.variants:
            raise UsageError(
                f"--variant trimmed_targets: yolox has no such variant (its targets are 1.6.0's "
                f"fixed {MAX_LABELS} rows)",
                hint="drop --variant trimmed_targets for yolox",
            )
        if VECTORISED_ASSIGNER in options.variants:
            raise UsageError(
                "--variant vectorised_assigner: yolox has no such variant (its SimOTA assigner "
                "is 1.6.0's, per image)",
                hint="drop --variant vectorised_assigner for yolox",
            )
        keys = options.keys_for(self.name)
        return YOLOXTrainStep(
            model,
            device=device,
            amp=amp,
            ema=ema and keys.ema,
            **keys.update_settings(),
            use_l1=keys.no_aug_phase,  # 1.6.0 turns the L1 term on with its no-aug epochs
            channels_last=channels_last or CHANNELS_LAST in options.variants,
            foreach_updates=FOREACH_UPDATES in options.variants,
        )

    def train_dataset(
        self,
        spec: DatasetSpec,
        imgsz: int,
        *,
        seed: int,
        cache: bool,
        options: TrainOptions = FAITHFUL,
    ) -> Dataset[Any]:
        augment = with_keys(YOLOX_AUGMENT, options.keys_for(self.name))
        return YOLOXDataset(spec, imgsz, augment, seed=seed, cache=cache)

    def collate(self, samples: list[Any]) -> Batch:
        return collate(samples)

    def probe_batch(self, batch: int, imgsz: int, nc: int, *, boxes_per_image: int = 1) -> Batch:
        """Random BGR 0..255 images with `boxes_per_image` grid boxes each (collate keeps at
        most MAX_LABELS), in collate's padded form."""
        images = torch.rand(batch, 3, imgsz, imgsz) * 255.0
        boxes, index = grid_boxes(min(boxes_per_image, MAX_LABELS), imgsz)
        targets = torch.zeros(batch, MAX_LABELS, 5)
        targets[:, : len(index), 0] = (index % nc).float()
        targets[:, : len(index), 1:] = xyxy_to_cxcywh(boxes)
        return Batch(images, targets, [])


WORKLOAD = YOLOXWorkload()
