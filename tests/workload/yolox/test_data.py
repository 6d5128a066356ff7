"""YOLOX training data: 1.6.0's preset numbers, the affine and MixUp, the dataset, the collate."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
import torch
from PIL import Image

from libreyolo.workload.data.augment import AugmentConfig, Tile, mixup, random_affine
from libreyolo.workload.data.dataset import Sample
from libreyolo.workload.data.dataset_config import load_dataset_yaml
from libreyolo.workload.data.loader import build_loader
from libreyolo.workload.data.synthetic import make_synthetic
from libreyolo.workload.yolox.data import (
    MAX_LABELS,
    YOLOX_AUGMENT,
    YOLOXDataset,
    collate,
    xyxy_to_cxcywh,
)


def test_preset_is_1_6_0s_yolox_defaults() -> None:
    cfg = YOLOX_AUGMENT
    # training/config.py:156-164 (TrainConfig) and :513-516 (YOLOXConfig).
    assert (cfg.mosaic, cfg.mosaic_prob) == (True, 1.0)
    assert (cfg.mixup, cfg.mixup_prob, cfg.mixup_scale) == (True, 1.0, (0.5, 1.5))
    assert (cfg.degrees, cfg.translate, cfg.scale_range, cfg.shear) == (10.0, 0.1, (0.1, 2.0), 2.0)
    assert (cfg.hsv, cfg.hsv_prob, cfg.flip, cfg.flip_prob) == (True, 1.0, True, 0.5)
    # augment_hsv(hgain=5, sgain=30, vgain=30), data/augment/color.py:11.
    assert (cfg.hsv_h, cfg.hsv_s, cfg.hsv_v) == (5.0, 30.0, 30.0)
    # preproc pads top-left with 114 (data/augment/geometry.py letterbox_preproc).
    assert cfg.pad == "topleft"
    # TrainTransform(max_labels=50), models/yolox/trainer.py:53.
    assert MAX_LABELS == 50
    # close_mosaic turns mosaic and mixup off (data/augment/yolox.py:305-308).
    closed = cfg.without_mosaic()
    assert not closed.mosaic and closed.mixup_prob == 1.0


def test_yolov9_defaults_unchanged() -> None:
    cfg = AugmentConfig()
    assert (cfg.degrees, cfg.shear, cfg.scale_range, cfg.mixup) == (0.0, 0.0, None, False)
    assert cfg.affine_min_px == 2.0


def _tile(size: int, boxes: list[list[float]]) -> Tile:
    image = Image.new("RGB", (size, size), (200, 10, 10))
    return Tile(image, torch.tensor(boxes, dtype=torch.float32), torch.arange(len(boxes)))


def test_random_affine_yolox_matches_the_hand_built_matrix() -> None:
    cfg = AugmentConfig(degrees=10.0, shear=2.0, scale_range=(0.1, 2.0), affine_min_px=0.0)
    tile = _tile(128, [[40.0, 30.0, 60.0, 50.0]])
    out = random_affine(tile, 64, cfg, random.Random(3))
    draws = random.Random(3)  # 1.6.0's order: angle, scale, shear x, shear y, tx, ty
    angle = math.radians(draws.uniform(-10, 10))
    s = draws.uniform(0.1, 2.0)
    shx, shy = (math.tan(math.radians(draws.uniform(-2, 2))) for _ in range(2))
    tx, ty = (draws.uniform(-0.1, 0.1) * 64 for _ in range(2))
    a, b = s * math.cos(angle), s * math.sin(angle)
    m = [[a - shy * b, b + shy * a, tx], [-b + shx * a, a + shx * b, ty]]
    xs, ys = [], []
    for x, y in ((40, 30), (60, 50), (40, 50), (60, 30)):
        xs.append(m[0][0] * x + m[0][1] * y + m[0][2])
        ys.append(m[1][0] * x + m[1][1] * y + m[1][2])
    expected = torch.tensor([min(xs), min(ys), max(xs), max(ys)]).clamp(0, 64)
    assert len(out.boxes) == 1
    assert torch.allclose(out.boxes[0], expected, atol=1e-4)
    assert out.image.size == (64, 64)


def test_random_affine_yolov9_path_draws_as_before() -> None:
    cfg = AugmentConfig()
    tile = _tile(128, [[40.0, 30.0, 80.0, 70.0]])
    out = random_affine(tile, 64, cfg, random.Random(5))
    draws = random.Random(5)
    s = draws.uniform(0.5, 1.5)
    tx, ty = (draws.uniform(-0.1, 0.1) * 64 for _ in range(2))
    expected = (torch.tensor([40.0, 30.0, 80.0, 70.0]) * s + torch.tensor([tx, ty, tx, ty])).clamp(
        0, 64
    )
    assert torch.allclose(out.boxes[0], expected, atol=1e-5)


def test_mixup_blends_and_appends_partner_boxes() -> None:
    size = 64
    base = Tile(
        Image.new("RGB", (size, size), (0, 0, 0)),
        torch.tensor([[1.0, 1, 20, 20]]),
        torch.tensor([0]),
    )
    partner = Tile(
        Image.new("RGB", (32, 32), (200, 200, 200)),
        torch.tensor([[4.0, 4, 28, 28]]),
        torch.tensor([7]),
    )
    cfg = AugmentConfig(mixup=True, mixup_scale=(1.0, 1.0))  # no size jitter: the crop is exact
    out = mixup(base, partner, size, cfg, random.Random(0))
    assert out.classes.tolist() == [0, 7]
    # Partner 32 px letterboxed to 64 (x2), no jitter, so its box doubles (maybe mirrored).
    assert out.boxes[1].tolist() == [8.0, 8.0, 56.0, 56.0]  # symmetric, so flip or not
    pixel = out.image.getpixel((10, 10))
    assert pixel == (100, 100, 100)  # 0.5 * 0 + 0.5 * 200


def _sample(boxes: list[list[float]], classes: list[int], size: int = 64) -> Sample:
    image = torch.zeros((3, size, size), dtype=torch.uint8)
    image[0] = 10  # R
    image[1] = 20  # G
    image[2] = 250  # B
    return Sample(
        image,
        torch.tensor(boxes, dtype=torch.float32).view(-1, 4),
        torch.tensor(classes, dtype=torch.long),
        "x.jpg",
    )


def test_collate_bgr_0_255_padded_cxcywh() -> None:
    boxes = [[0.0, 0.0, 10.0, 20.0], [10.0, 12.0, 30.0, 40.0], [1.0, 2.0, 3.0, 6.0]]
    batch = collate([_sample(boxes, [3, 0, 5]), _sample([], [])])
    assert batch.images.shape == (2, 3, 64, 64) and batch.images.dtype == torch.float32
    assert batch.images[0, :, 0, 0].tolist() == [250.0, 20.0, 10.0]  # B, G, R, not divided
    assert batch.targets.shape == (2, MAX_LABELS, 5) and batch.targets.dtype == torch.float32
    nonzero = batch.targets[0].abs().sum(1) > 0
    assert nonzero.tolist() == [True] * 3 + [False] * 47
    assert batch.targets[0, :3].tolist() == [
        [3.0, 5.0, 10.0, 10.0, 20.0],
        [0.0, 20.0, 26.0, 20.0, 28.0],
        [5.0, 2.0, 4.0, 2.0, 4.0],
    ]
    assert not batch.targets[1].any()
    assert batch.paths == ["x.jpg", "x.jpg"]


def test_collate_keeps_the_first_50_boxes() -> None:
    # 1.6.0: padded_labels[range(n)[:50]] = targets_t[:50] (data/augment/yolox.py:69-73).
    boxes = [[float(i), 0.0, float(i) + 2.0, 4.0] for i in range(60)]
    batch = collate([_sample(boxes, [i % 3 for i in range(60)])])
    assert batch.targets.shape == (1, 50, 5)
    assert batch.targets[0, :, 1].tolist() == [i + 1.0 for i in range(50)]


def test_xyxy_to_cxcywh() -> None:
    out = xyxy_to_cxcywh(torch.tensor([[2.0, 4.0, 10.0, 8.0]]))
    assert out.tolist() == [[6.0, 6.0, 8.0, 4.0]]


@pytest.fixture(scope="module")
def synthetic_yaml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_synthetic(tmp_path_factory.mktemp("syn"), num_train=8, num_val=1, imgsz=96)


def test_dataset_and_loader_yield_yolox_batches(synthetic_yaml: Path) -> None:
    dataset = YOLOXDataset(load_dataset_yaml(synthetic_yaml), 64, seed=0)
    assert dataset.augment == YOLOX_AUGMENT
    loader = build_loader(dataset, batch=4, workers=0, seed=0, collate_fn=collate)
    batch = next(iter(loader))
    assert batch.images.shape == (4, 3, 64, 64)
    assert float(batch.images.min()) >= 0.0 and float(batch.images.max()) <= 255.0
    assert float(batch.images.max()) > 1.0  # not normalised
    assert batch.targets.shape == (4, 50, 5)
    real = batch.targets[batch.targets.abs().sum(-1) > 0]
    assert len(real) > 0
    assert bool((real[:, 3] > 1).all() and (real[:, 4] > 1).all())  # w, h > 1 px (yolox.py:56)
    assert bool((real[:, 1] >= 0).all() and (real[:, 1] <= 64).all())


def test_close_mosaic_turns_mosaic_and_mixup_off(synthetic_yaml: Path) -> None:
    dataset = YOLOXDataset(load_dataset_yaml(synthetic_yaml), 64, seed=0)
    dataset.close_mosaic()
    assert not dataset.augment.mosaic
    sample = dataset[0]
    assert sample.image.shape == (3, 64, 64) and len(sample.boxes) > 0


def test_random_affine_moves_pixels_with_boxes() -> None:
    """The image warp (PIL's inverse map) and the box warp agree: a white square stays boxed."""
    cfg = AugmentConfig(degrees=10.0, shear=2.0, scale_range=(0.8, 1.2), affine_min_px=0.0)
    image = Image.new("RGB", (128, 128), (0, 0, 0))
    image.paste((255, 255, 255), (40, 30, 70, 60))
    tile = Tile(image, torch.tensor([[40.0, 30.0, 70.0, 60.0]]), torch.tensor([0]))
    for seed in range(5):
        out = random_affine(tile, 128, cfg, random.Random(seed))
        pixels = torch.frombuffer(bytearray(out.image.convert("L").tobytes()), dtype=torch.uint8)
        ys, xs = torch.nonzero(pixels.view(128, 128) > 128, as_tuple=True)
        found = torch.tensor([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], dtype=torch.float32)
        assert torch.allclose(found, out.boxes[0], atol=2.0), (seed, found, out.boxes[0])
