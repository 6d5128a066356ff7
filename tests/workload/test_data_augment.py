"""Letterbox, mosaic, affine, HSV and flip: images and boxes move together; switches hold."""

from __future__ import annotations

import random

import pytest
import torch
from PIL import Image, ImageDraw

from libreyolo.errors import UsageError
from libreyolo.workload.data.augment import (
    AugmentConfig,
    Tile,
    augment_tiles,
    hflip,
    hsv_jitter,
    letterbox,
    mosaic,
    random_affine,
)
from libreyolo.workload.data.dataset import YoloDataset
from libreyolo.workload.data.dataset_config import DatasetSpec, load_dataset_yaml
from libreyolo.workload.data.synthetic import make_synthetic

RED = (230, 20, 20)


def _tile(width: int, height: int, box: tuple[int, int, int, int]) -> Tile:
    image = Image.new("RGB", (width, height), (90, 90, 90))
    ImageDraw.Draw(image).rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill=RED)
    return Tile(image, torch.tensor([box], dtype=torch.float32), torch.tensor([1]))


def _is_red(image: Image.Image, x: float, y: float) -> bool:
    pixel = image.getpixel((int(x), int(y)))
    assert isinstance(pixel, tuple)
    r, g, b = pixel[:3]
    return r > 180 and g < 80 and b < 80


@pytest.mark.parametrize("pad", ["topleft", "center"])
def test_letterbox_round_trips_boxes_and_moves_pixels_with_them(pad: str) -> None:
    tile = _tile(200, 100, (40, 20, 120, 60))
    out, info = letterbox(tile.image, 64, pad=pad)  # type: ignore[arg-type]
    assert out.size == (64, 64)
    assert info.scale == pytest.approx(0.32)
    assert (info.pad_x, info.pad_y) == ((0, 0) if pad == "topleft" else (0, 16))
    boxes = info.to_input(tile.boxes)
    assert torch.allclose(info.to_original(boxes), tile.boxes, atol=1e-5)
    x1, y1, x2, y2 = boxes[0].tolist()
    assert _is_red(out, (x1 + x2) / 2, (y1 + y2) / 2)
    assert not _is_red(out, x2 + 2, y2 + 2)
    assert out.getpixel((63, 63)) == (114, 114, 114)  # padding below the 64x32 content


def test_hflip_mirrors_boxes_and_is_an_involution() -> None:
    tile = _tile(50, 30, (5, 10, 15, 20))
    flipped, boxes = hflip(tile.image, tile.boxes)
    assert boxes.tolist() == [[35.0, 10.0, 45.0, 20.0]]
    assert _is_red(flipped, 40, 15) and not _is_red(flipped, 10, 15)
    back, again = hflip(flipped, boxes)
    assert torch.equal(again, tile.boxes) and back.tobytes() == tile.image.tobytes()


def test_hsv_jitter_keeps_geometry_and_zero_gains_are_identity() -> None:
    image = _tile(40, 40, (0, 0, 20, 20)).image
    cfg = AugmentConfig(hsv_h=0.0, hsv_s=0.0, hsv_v=0.0)
    assert hsv_jitter(image, random.Random(0), cfg) is image
    changed = [hsv_jitter(image, random.Random(seed), AugmentConfig()) for seed in range(6)]
    assert all(c.size == (40, 40) and c.mode == "RGB" for c in changed)
    assert any(c.tobytes() != image.tobytes() for c in changed)


def test_mosaic_builds_a_double_canvas_with_every_box_inside() -> None:
    tiles = [_tile(64, 48, (10, 10, 30, 30)) for _ in range(4)]
    out = mosaic(tiles, 64, random.Random(1))
    assert out.image.size == (128, 128)
    assert out.boxes.shape[1] == 4 and len(out.boxes) == len(out.classes) >= 1
    assert bool((out.boxes >= 0).all() and (out.boxes <= 128).all())
    for x1, y1, x2, y2 in out.boxes.tolist():
        assert _is_red(out.image, (x1 + x2) / 2, (y1 + y2) / 2)


def test_mosaic_pipeline_outputs_size_and_drops_tiny_boxes() -> None:
    tiles = [_tile(64, 64, (10, 10, 50, 50)), *[_tile(64, 64, (0, 0, 2, 2)) for _ in range(3)]]
    for seed in range(5):
        out = augment_tiles(tiles, 64, AugmentConfig(), random.Random(seed))
        assert out.image.size == (64, 64)
        widths, heights = out.boxes[:, 2] - out.boxes[:, 0], out.boxes[:, 3] - out.boxes[:, 1]
        assert bool((widths > 1).all() and (heights > 1).all())
        assert bool((out.boxes >= 0).all() and (out.boxes <= 64).all())


def test_affine_without_scale_or_shift_is_the_top_left_window() -> None:
    tile = _tile(128, 128, (8, 8, 40, 40))
    cfg = AugmentConfig(scale=0.0, translate=0.0)
    out = random_affine(tile, 64, cfg, random.Random(0))
    assert out.image.tobytes() == tile.image.crop((0, 0, 64, 64)).tobytes()
    assert torch.equal(out.boxes, tile.boxes)


def test_augment_config_switches() -> None:
    assert AugmentConfig.none().deterministic
    assert not AugmentConfig().deterministic
    assert AugmentConfig(mosaic_prob=0.0, hsv=False, flip_prob=0.0).deterministic
    assert not AugmentConfig().without_mosaic().mosaic
    assert AugmentConfig.none(pad="center").pad == "center"
    with pytest.raises(UsageError, match="flip_prob must be within"):
        AugmentConfig(flip_prob=1.5)
    with pytest.raises(UsageError, match="letterbox pad"):
        AugmentConfig(pad="middle")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> DatasetSpec:
    root = tmp_path_factory.mktemp("synthetic")
    return load_dataset_yaml(make_synthetic(root, num_train=6, num_val=2, imgsz=96, seed=2))


def test_dataset_without_augmentation_is_deterministic(spec: DatasetSpec) -> None:
    a = YoloDataset(spec, 64, AugmentConfig.none())
    b = YoloDataset(spec, 64, AugmentConfig.none(), seed=5)
    for i in range(len(a)):
        assert torch.equal(a[i].image, b[i].image) and torch.equal(a[i].boxes, b[i].boxes)


def test_dataset_augmentation_is_seeded(spec: DatasetSpec) -> None:
    a, b = YoloDataset(spec, 64, seed=1), YoloDataset(spec, 64, seed=1)
    c = YoloDataset(spec, 64, seed=2)
    assert all(torch.equal(a[i].image, b[i].image) for i in range(3))
    assert any(not torch.equal(a[i].image, c[i].image) for i in range(3))
    assert a[0].image.shape == (3, 64, 64)
