"""The YOLOX predict path: letterbox preprocessing, decoding and detection postprocessing.

No model is involved: head maps are hand-built (B, 5+nc, H, W) tensors with known boxes.
"""

from __future__ import annotations

import math

import pytest
import torch
from PIL import Image

from libreyolo.errors import UsageError
from libreyolo.workload.letterbox import Letterbox
from libreyolo.workload.yolox.predict import (
    decode,
    input_size,
    letterbox,
    postprocess,
    preprocess,
)

NC = 3
IMGSZ = 64
STRIDES = (8, 16, 32)


def empty_maps(batch: int = 1, imgsz: int = IMGSZ) -> list[torch.Tensor]:
    """Eval-mode maps with zero objectness and class scores everywhere."""
    return [torch.zeros(batch, 5 + NC, imgsz // s, imgsz // s) for s in STRIDES]


def place(
    maps: list[torch.Tensor],
    xyxy: tuple[float, float, float, float],
    *,
    level: int = 0,
    cls: int = 0,
    obj: float = 0.9,
    score: float = 0.9,
    image: int = 0,
) -> None:
    """Write an input-pixel box into the cell of `level` holding its centre (eval scores)."""
    stride = STRIDES[level]
    cx, cy = (xyxy[0] + xyxy[2]) / 2, (xyxy[1] + xyxy[3]) / 2
    w, h = xyxy[2] - xyxy[0], xyxy[3] - xyxy[1]
    gx, gy = int(cx // stride), int(cy // stride)
    cell = maps[level][image, :, gy, gx]
    cell[:4] = torch.tensor(
        [cx / stride - gx, cy / stride - gy, math.log(w / stride), math.log(h / stride)]
    )
    cell[4] = obj
    cell[5 + cls] = score


def square_box() -> Letterbox:
    return letterbox(IMGSZ, IMGSZ, IMGSZ)


# ---- sizes and preprocessing ----------------------------------------------------------------


def test_input_size_takes_multiples_of_32_and_refuses_others() -> None:
    assert input_size(416) == 416 and input_size(32) == 32
    for bad in (0, -32, 100):
        with pytest.raises(UsageError):
            input_size(bad)


def test_letterbox_floors_sides_and_sits_top_left() -> None:
    box = letterbox(200, 100, 64)
    assert (box.scale, box.new_w, box.new_h, box.pad_x, box.pad_y) == (0.32, 64, 32, 0, 0)
    # 1.6.0 floors: 33 × (64/100) = 21.12 -> 21 (round would also give 21; 35 × 0.64 = 22.4 -> 22)
    odd = letterbox(35, 100, 64)
    assert (odd.new_w, odd.new_h) == (22, 64)
    floors = letterbox(1000, 37, 64)  # 37 × 0.064 = 2.368 -> 2
    assert floors.new_h == 2


def test_preprocess_is_bgr_0_255_with_grey_padding_below() -> None:
    red = Image.new("RGB", (20, 10), (255, 0, 0))
    batch, boxes = preprocess([red], imgsz=32)
    assert batch.shape == (1, 3, 32, 32) and batch.dtype == torch.float32
    assert boxes[0] == letterbox(20, 10, 32)
    assert (boxes[0].new_w, boxes[0].new_h) == (32, 16)
    image, pad = batch[0, :, :16], batch[0, :, 16:]
    assert torch.all(image[2] == 255) and torch.all(image[:2] == 0)  # red lands in channel 2
    assert torch.all(pad == 114)


def test_preprocess_matches_pil_bilinear_resize_pixel_for_pixel() -> None:
    gen = torch.Generator().manual_seed(0)
    pixels = torch.randint(0, 256, (30, 50, 3), generator=gen, dtype=torch.uint8)
    img = Image.frombytes("RGB", (50, 30), bytes(pixels.flatten().tolist()))
    batch, (box,) = preprocess([img], imgsz=32)
    resized = img.resize((box.new_w, box.new_h), Image.Resampling.BILINEAR)
    expected = torch.tensor(list(resized.tobytes()), dtype=torch.float32)
    expected = expected.view(box.new_h, box.new_w, 3).permute(2, 0, 1).flip(0)
    assert torch.equal(batch[0, :, : box.new_h, : box.new_w], expected)
    assert torch.all(batch[0, :, box.new_h :] == 114)


def test_preprocess_needs_images_and_converts_other_modes() -> None:
    with pytest.raises(UsageError):
        preprocess([], imgsz=32)
    grey = Image.new("L", (32, 32), 7)
    batch, _ = preprocess([grey], imgsz=32)
    assert torch.all(batch == 7)


# ---- decode ---------------------------------------------------------------------------------


def test_decode_places_one_anchor_at_its_known_box() -> None:
    maps = empty_maps()
    # stride 16, cell x=2, y=1: offsets (0.5, 0.25), log sizes (ln 2, ln 3).
    maps[1][0, :4, 1, 2] = torch.tensor([0.5, 0.25, math.log(2), math.log(3)])
    maps[1][0, 4:, 1, 2] = torch.tensor([0.7, 0.1, 0.2, 0.3])
    out = decode(maps, STRIDES)
    assert out.shape == (1, 64 + 16 + 4, 5 + NC)
    row = out[0, 64 + 1 * 4 + 2]
    torch.testing.assert_close(row, torch.tensor([40.0, 20.0, 32.0, 48.0, 0.7, 0.1, 0.2, 0.3]))
    # An untouched anchor: grid position × stride (0-based, no half-cell), size = one stride.
    torch.testing.assert_close(
        out[0, 64 + 16 + 3], torch.tensor([32.0, 32.0, 32.0, 32.0, 0, 0, 0, 0])
    )


def test_decode_is_float32_for_half_maps_and_does_not_touch_them() -> None:
    maps = [m.half() for m in empty_maps()]
    maps[2][0, 2, 1, 1] = 12.0  # exp(12)·32 overflows fp16, not fp32
    before = [m.clone() for m in maps]
    out = decode(maps, STRIDES)
    assert out.dtype == torch.float32
    assert math.isclose(out[0, 64 + 16 + 3, 2].item(), math.exp(12) * 32, rel_tol=1e-3)
    assert all(torch.equal(a, b) for a, b in zip(maps, before, strict=True))


def test_decode_refuses_a_stride_count_mismatch() -> None:
    with pytest.raises(UsageError):
        decode(empty_maps()[:2], STRIDES)


# ---- postprocess ----------------------------------------------------------------------------


def test_nms_keeps_the_higher_of_two_overlapping_same_class_boxes() -> None:
    maps = empty_maps()
    place(maps, (8, 8, 40, 40), score=0.6)
    place(maps, (10, 10, 42, 42), level=1, score=0.8)
    (det,) = postprocess(maps, [square_box()], conf=0.25, iou=0.45)
    assert det.boxes.shape == (1, 4)
    torch.testing.assert_close(det.boxes[0], torch.tensor([10.0, 10.0, 42.0, 42.0]))
    torch.testing.assert_close(det.scores, torch.tensor([0.9 * 0.8]))


def test_overlapping_boxes_of_different_classes_are_both_kept() -> None:
    maps = empty_maps()
    place(maps, (8, 8, 40, 40), cls=0, score=0.6)
    place(maps, (10, 10, 42, 42), level=1, cls=2, score=0.8)
    (det,) = postprocess(maps, [square_box()])
    assert det.classes.tolist() == [2, 0]  # by descending score
    torch.testing.assert_close(det.scores, torch.tensor([0.72, 0.54]))


def test_score_is_objectness_times_best_class_and_conf_is_strict() -> None:
    maps = empty_maps()
    place(maps, (0, 0, 16, 16), obj=1.0, score=0.3)  # 0.30 > 0.25: kept
    place(maps, (40, 40, 56, 56), obj=0.5, score=0.5)  # 0.25, not above: dropped
    place(maps, (40, 0, 56, 16), obj=0.4, score=0.9)  # 0.36: kept
    maps[0][0, 5 + 1, 0, 0] = 0.2  # a weaker second class on the first anchor: not a 2nd label
    (det,) = postprocess(maps, [square_box()], conf=0.25)
    assert det.classes.tolist() == [0, 0]
    torch.testing.assert_close(det.scores, torch.tensor([0.36, 0.3]))


def test_max_det_keeps_the_best() -> None:
    maps = empty_maps()
    for i in range(4):
        place(maps, (16 * i, 0, 16 * i + 12, 12), score=0.5 + 0.1 * i)
    (det,) = postprocess(maps, [square_box()], max_det=2)
    torch.testing.assert_close(det.scores, torch.tensor([0.9 * 0.8, 0.9 * 0.7]))


def test_boxes_map_back_to_original_pixels_and_are_clipped() -> None:
    box = letterbox(200, 100, IMGSZ)  # ratio 0.32; the image fills the top 64 × 32
    original = torch.tensor([[50.0, 25.0, 150.0, 75.0]])
    x1, y1, x2, y2 = box.to_input(original)[0].tolist()
    assert (x1, y1, x2, y2) == (16.0, 8.0, 48.0, 24.0)
    maps = empty_maps()
    place(maps, (x1, y1, x2, y2))
    place(maps, (40, 16, 72, 48), level=1, cls=1)  # spills past the image's right and bottom
    (det,) = postprocess(maps, [box])
    got = {int(c): b for c, b in zip(det.classes, det.boxes, strict=True)}
    torch.testing.assert_close(got[0], original[0])
    torch.testing.assert_close(got[1], torch.tensor([125.0, 50.0, 200.0, 100.0]))


def test_each_image_of_a_batch_gets_its_own_detections() -> None:
    maps = empty_maps(batch=2)
    place(maps, (8, 8, 40, 40), image=1)
    dets = postprocess(maps, [square_box(), square_box()])
    assert [len(d.scores) for d in dets] == [0, 1]
    assert dets[0].boxes.shape == (0, 4)
    with pytest.raises(UsageError):
        postprocess(maps, [square_box()])
