"""YOLOv9 as a `Workload`: today's model, checkpoint, predict path, TrainStep and augmentations.

Role: the adapter the registry hands to the collectors; every method delegates to the YOLOv9
modules, so measuring through the interface measures exactly what they did before.
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
from libreyolo.workload.data.augment import AugmentConfig, with_keys
from libreyolo.workload.data.dataset import YoloDataset
from libreyolo.workload.data.dataset_config import DatasetSpec
from libreyolo.workload.data.loader import Batch, collate
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
    AUX_WEIGHT,
    CHANNELS_LAST,
    FOREACH_UPDATES,
    MAX_LABELS,
    TRIMMED_TARGETS,
    VECTORISED_ASSIGNER,
    TrainStep,
    with_padded_targets,
)
from libreyolo.workload.yolo9 import checkpoint, predict
from libreyolo.workload.yolo9.model import FUSE_MODES, SIZES, FuseMode, YOLOv9

DEFAULT_IMGSZ = 640


class YOLOv9Workload:
    """The YOLOv9 family (t/s/m/c)."""

    name = checkpoint.FAMILY
    sizes: tuple[str, ...] = tuple(SIZES)
    default_size = "t"
    stride = predict.STRIDE
    fuse_modes: tuple[str, ...] = FUSE_MODES

    def default_imgsz(self, size: str) -> int:
        return DEFAULT_IMGSZ

    def model_name(self, size: str) -> str:
        return f"LibreYOLO9{size}"

    def claims_name(self, stem: str) -> str | None:
        return checkpoint.size_from_filename(f"{stem}.pt")

    def detect(self, ckpt: Mapping[str, Any]) -> tuple[str | None, int | None] | None:
        try:
            state = checkpoint._normalise_keys(state_dict_of(dict(ckpt), "checkpoint"))
        except CheckpointError:  # no weights at all: not ours to claim
            return None
        # MTL numbered keys are claimed too, so that loading explains why they are refused.
        if checkpoint.sniff_family(state) not in (self.name, "mtl"):
            return None
        last = state.get("head.cv3.0.2.weight")
        return checkpoint._sniff_size(state), int(last.shape[0]) if last is not None else None

    def build(self, size: str, nc: int, *, for_training: bool) -> nn.Module:
        return YOLOv9(size, nc, aux=for_training)

    def load(
        self, path: str | os.PathLike[str], *, size: str | None, device: str | torch.device
    ) -> nn.Module:
        return checkpoint.load_checkpoint(path, size=size, device=device)

    def describe(self, model: nn.Module) -> Description:
        yolo = cast(YOLOv9, model)
        num_params = sum(p.numel() for p in yolo.parameters())
        return Description(self.name, yolo.size, yolo.nc, dict(yolo.names), num_params)

    def reset_classes(self, model: nn.Module, nc: int, names: dict[int, str]) -> None:
        cast(YOLOv9, model).reset_classes(nc, names)

    def fuse(self, model: nn.Module, mode: str) -> nn.Module:
        # The unfused model is not used again by a measurement: fuse in place.
        return cast(YOLOv9, model).fuse(cast(FuseMode, mode), in_place=True)

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
        trimmed = TRIMMED_TARGETS in options.variants
        if trimmed and options.max_labels is not None:
            raise UsageError(
                f"--max-labels {options.max_labels} and --variant trimmed_targets: trimmed "
                "targets have as many rows as the batch's most crowded image",
                hint="give one of them",
            )
        keys = options.keys_for(self.name)
        rows = None if trimmed else options.max_labels or keys.max_labels or MAX_LABELS
        aux_weight = AUX_WEIGHT if keys.aux_weight is None else keys.aux_weight
        if isinstance(model, YOLOv9):  # 1.6.0 trains with PGI unless aux_weight is 0
            model.set_aux(aux_weight > 0)
        return TrainStep(
            model,
            device=device,
            amp=amp,
            ema=ema and keys.ema,
            **keys.update_settings(),
            channels_last=channels_last or CHANNELS_LAST in options.variants,
            target_rows=rows,
            aux_weight=aux_weight,
            foreach_updates=FOREACH_UPDATES in options.variants,
            vectorised_assigner=VECTORISED_ASSIGNER in options.variants,
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
        augment = with_keys(AugmentConfig(), options.keys_for(self.name))
        return YoloDataset(spec, imgsz, augment, seed=seed, cache=cache)

    def collate(self, samples: list[Any]) -> Batch:
        return with_padded_targets(collate(samples))

    def probe_batch(self, batch: int, imgsz: int, nc: int, *, boxes_per_image: int = 1) -> Batch:
        """Random images, each with `boxes_per_image` grid boxes, in collate's row form."""
        images = torch.rand(batch, 3, imgsz, imgsz)
        boxes, index = grid_boxes(boxes_per_image, imgsz)
        rows = torch.cat((torch.zeros(len(index), 1), (index % nc).view(-1, 1).float(), boxes), 1)
        targets = rows.repeat(batch, 1)
        targets[:, 0] = torch.arange(batch).repeat_interleave(boxes_per_image).float()
        return with_padded_targets(Batch(images, targets, []))


WORKLOAD = YOLOv9Workload()
