"""What 1.6.0's YOLOX training feeds its model: the augmentation preset, the dataset, the collate.

Role: express 1.6.0's YOLOX pipeline (`data/augment/yolox.py` MosaicMixupDataset + TrainTransform,
`models/yolox/trainer.py`, `training/config.py` YOLOXConfig) on this project's data pipeline:

    mosaic (p 1.0) -> affine (degrees 10, translate 0.1, scale U(0.1, 2.0), shear 2, origin
    pivot) -> MixUp (p 1.0, jitter U(0.5, 1.5), 50/50 blend) -> HSV (5, 30, 30; p 1.0) ->
    horizontal flip (p 0.5) -> letterbox top-left (114) -> drop boxes with w or h <= 1 px.

The Batch a YOLOX loader yields (the YOLOX train step's input contract):

    Batch.images   float32 (B, 3, S, S), BGR, 0..255 (no /255), letterboxed with 114.
    Batch.targets  float32 (B, 50, 5), rows [class, cx, cy, w, h] in input pixels; the first n
                   rows of image b are its n boxes (n <= 50, more are cut off as 1.6.0 does), the
                   rest are all zero (padding).
    Batch.paths    list[str], as `loader.Batch`.

Where the conversion happens: 1.6.0 builds the padded (50, 5) cxcywh array per image inside the
dataset item, on the CPU in the DataLoader workers (`TrainTransform.__call__`, data/augment/
yolox.py:31-74: xyxy2cxcywh at :53, zero-pad and cut to max_labels at :69-73, with images already
BGR float32 0..255 from `preproc`); its `yolox_collate_fn` (data/dataset.py:1013) only stacks, and
the train step only moves both to the device. Here the dataset keeps returning `Sample`s and
`collate` does the BGR flip, the float conversion and the padding, also on the CPU in the
workers, so the work stays inside the profile's `dataload` phase, as in 1.6.0.

Must not: touch a device, normalise pixels, or change the YOLOv9 pipeline's behaviour.
"""

from __future__ import annotations

import random

import torch

from libreyolo.workload.data.augment import (
    AugmentConfig,
    Tile,
    augment_tiles,
    mixup,
    mosaic,
    random_affine,
)
from libreyolo.workload.data.dataset import OnBad, Sample, YoloDataset, _to_chw
from libreyolo.workload.data.dataset_config import DatasetSpec
from libreyolo.workload.data.loader import Batch

__all__ = ["MAX_LABELS", "YOLOX_AUGMENT", "YOLOXDataset", "collate", "xyxy_to_cxcywh"]

MAX_LABELS = 50  # TrainTransform(max_labels=50), models/yolox/trainer.py:53

# 1.6.0's defaults: training/config.py TrainConfig :156-164 and YOLOXConfig :513-516.
YOLOX_AUGMENT = AugmentConfig(
    mosaic=True,
    mosaic_prob=1.0,
    degrees=10.0,
    translate=0.1,
    scale_range=(0.1, 2.0),
    shear=2.0,
    affine_min_px=0.0,  # 1.6.0's YOLOX affine drops nothing; only the final w, h > 1 px filter
    mixup=True,
    mixup_prob=1.0,
    mixup_scale=(0.5, 1.5),
    hsv=True,
    hsv_prob=1.0,
    hsv_h=5.0,  # augment_hsv(hgain=5, sgain=30, vgain=30), data/augment/color.py:11
    hsv_s=30.0,
    hsv_v=30.0,
    flip=True,
    flip_prob=0.5,
    pad="topleft",
)


class YOLOXDataset(YoloDataset):
    """A YoloDataset running 1.6.0's YOLOX item pipeline (mosaic, affine, MixUp, TrainTransform).

    `close_mosaic()` is 1.6.0's switch for the last no-aug epochs (mosaic and MixUp off). With
    persistent workers it reaches only loaders built afterwards: the workers hold their copies.
    """

    def __init__(
        self,
        spec: DatasetSpec,
        imgsz: int,
        augment: AugmentConfig | None = None,
        *,
        on_bad: OnBad = "skip",
        seed: int | None = None,
        cache: bool = False,
    ) -> None:
        super().__init__(
            spec,
            imgsz,
            augment if augment is not None else YOLOX_AUGMENT,
            on_bad=on_bad,
            seed=seed,
            cache=cache,
        )

    def close_mosaic(self) -> None:
        """Turn mosaic (and with it MixUp) off, as 1.6.0 does for its last no-aug epochs."""
        self.augment = self.augment.without_mosaic()

    def _sample(self, position: int, rng: random.Random) -> Sample:
        item, cfg, size = self._items[position], self.augment, self.imgsz
        tile = self._load(item)
        if cfg.mosaic and rng.random() < cfg.mosaic_prob:
            partners = [self._partner(rng) for _ in range(3)]
            tile = random_affine(mosaic([tile, *partners], size, rng), size, cfg, rng)
            if cfg.mixup and len(tile.boxes) > 0 and rng.random() < cfg.mixup_prob:
                tile = mixup(tile, self._partner(rng), size, cfg, rng)
        out = _train_transform(tile, size, cfg, rng)
        return Sample(_to_chw(out.image), out.boxes.float(), out.classes.long(), str(item.path))


def _train_transform(tile: Tile, size: int, cfg: AugmentConfig, rng: random.Random) -> Tile:
    """1.6.0's TrainTransform: HSV, flip, letterbox, w and h > 1 px; its two fallbacks.

    An image without boxes is only letterboxed; one whose boxes all vanish is letterboxed
    again without the HSV and flip (data/augment/yolox.py:34-37 and :60-63).
    """
    plain = AugmentConfig.none(pad=cfg.pad)
    if len(tile.boxes) == 0:
        return augment_tiles([tile], size, plain, rng)
    out = augment_tiles([tile], size, cfg.without_mosaic(), rng)
    if len(out.boxes) == 0:
        out = augment_tiles([tile], size, plain, rng)
    return out


def xyxy_to_cxcywh(boxes: torch.Tensor) -> torch.Tensor:
    """(n, 4) corners to (n, 4) centre x, centre y, width, height."""
    x1, y1, x2, y2 = boxes.unbind(-1)
    return torch.stack(((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1), dim=-1)


def collate(samples: list[Sample]) -> Batch:
    """Stack samples into 1.6.0's YOLOX input: BGR float 0..255 images, (B, 50, 5) targets."""
    if not samples:
        raise ValueError("cannot collate an empty batch")
    # RGB -> BGR by reversing the channel axis, then uint8 -> float32 without scaling.
    images = torch.stack([s.image for s in samples]).flip(1).to(torch.float32)
    targets = torch.zeros((len(samples), MAX_LABELS, 5), dtype=torch.float32)
    for i, s in enumerate(samples):
        n = min(len(s.boxes), MAX_LABELS)  # 1.6.0 keeps the first 50 and drops the rest
        targets[i, :n, 0] = s.classes[:n].to(torch.float32)
        targets[i, :n, 1:] = xyxy_to_cxcywh(s.boxes[:n].to(torch.float32))
    return Batch(images, targets, [s.path for s in samples])
