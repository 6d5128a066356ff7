"""The predict path around the network: sources, decoding, letterbox and detection decoding.

No model is involved: predictions are synthetic (B, 4+nc, A) tensors built from known boxes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from PIL import Image

from libreyolo.errors import ExitStatus, MissingFileError, UsageError
from libreyolo.workload.yolo9.predict import (
    PAD_VALUE,
    SAMPLE_IMAGE,
    Detections,
    Letterbox,
    decode_image,
    input_size,
    load_images,
    postprocess,
    preprocess,
)

NC = 3


# ---- sources and decoding -------------------------------------------------------------------


def test_default_source_is_the_bundled_sample() -> None:
    assert load_images(None) == [SAMPLE_IMAGE]
    img = decode_image(SAMPLE_IMAGE)
    assert img.mode == "RGB" and img.size == (1280, 852)
    assert SAMPLE_IMAGE.stat().st_size < 400_000


def test_a_file_is_taken_whatever_its_extension(tmp_path: Path) -> None:
    odd = tmp_path / "frame.data"
    Image.new("RGB", (8, 6)).save(odd, "PNG")
    assert load_images(str(odd)) == [odd]
    assert decode_image(odd).size == (8, 6)


def test_directory_yields_sorted_image_children_only(tmp_path: Path) -> None:
    for name in ("b.jpg", "A.PNG", "c.webp", "d.tiff", "notes.txt", "e.gif"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "sub.jpg").mkdir()  # a directory with an image suffix is not an image
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "z.jpg").write_bytes(b"x")  # not recursive
    found = load_images(tmp_path)
    assert [p.name for p in found] == ["A.PNG", "b.jpg", "c.webp", "d.tiff"]


def test_empty_directory_and_missing_path_exit_2(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        load_images(str(tmp_path))
    assert err.value.message == f"no images found at: {tmp_path}"
    assert err.value.status == ExitStatus.USAGE
    with pytest.raises(MissingFileError) as err:
        load_images("no_such_dir")
    assert err.value.message == "no images found at: no_such_dir"
    assert err.value.status == ExitStatus.USAGE


def test_corrupt_and_truncated_images_name_the_file(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.jpg"
    garbage.write_bytes(b"definitely not a jpeg" * 10)
    truncated = tmp_path / "truncated.jpg"
    Image.new("RGB", (64, 64), (200, 10, 10)).save(tmp_path / "full.jpg", quality=90)
    truncated.write_bytes((tmp_path / "full.jpg").read_bytes()[:300])
    for bad in (garbage, truncated):
        with pytest.raises(UsageError) as err:
            decode_image(bad)
        assert str(bad) in err.value.message and err.value.status == ExitStatus.USAGE


def test_decode_converts_to_rgb(tmp_path: Path) -> None:
    grey = tmp_path / "grey.png"
    Image.new("L", (5, 4), 77).save(grey)
    img = decode_image(grey)
    assert img.mode == "RGB" and img.getpixel((0, 0)) == (77, 77, 77)


# ---- preprocess -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "pad", "expected"),
    [
        ((1280, 852), "topleft", (0.5, 640, 426, 0, 0)),
        ((1280, 852), "center", (0.5, 640, 426, 0, 107)),
        ((300, 600), "center", (640 / 600, 320, 640, 160, 0)),
        ((100, 50), "topleft", (6.4, 640, 320, 0, 0)),  # small images are scaled up
    ],
)
def test_letterbox_fit(size: tuple[int, int], pad: str, expected: tuple) -> None:
    box = Letterbox.fit(*size, 640, pad)  # type: ignore[arg-type]
    assert (box.scale, box.new_w, box.new_h, box.pad_x, box.pad_y) == pytest.approx(expected)


def test_letterbox_rejects_an_unknown_pad_mode() -> None:
    with pytest.raises(UsageError, match="topleft"):
        Letterbox.fit(10, 10, 64, "middle")  # type: ignore[arg-type]


def test_input_size_rounds_up_to_the_stride() -> None:
    assert [input_size(n) for n in (640, 641, 100, 32, 1)] == [640, 672, 128, 32, 32]
    with pytest.raises(UsageError):
        input_size(0)


@pytest.mark.parametrize("pad", ["topleft", "center"])
def test_preprocess_places_the_image_and_pads_with_114(pad: str) -> None:
    img = Image.new("RGB", (200, 100), (255, 0, 40))
    batch, (box,) = preprocess([img], imgsz=64, pad=pad)  # type: ignore[arg-type]
    assert batch.shape == (1, 3, 64, 64) and batch.dtype == torch.float32
    assert (box.new_w, box.new_h) == (64, 32)
    top = 0 if pad == "topleft" else 16
    assert box.pad_y == top and box.pad_x == 0
    inside = batch[0, :, top : top + 32, :]
    assert torch.allclose(inside[0], torch.tensor(1.0)) and torch.allclose(
        inside[1], torch.tensor(0.0)
    )
    assert torch.allclose(inside[2], torch.tensor(40 / 255))
    outside = torch.cat([batch[0, :, :top, :], batch[0, :, top + 32 :, :]], dim=1)
    assert outside.numel() == 3 * 32 * 64
    assert torch.allclose(outside, torch.tensor(PAD_VALUE / 255))


def test_preprocess_batch_dtype_and_exact_pixels_without_resize() -> None:
    torch.manual_seed(0)
    raw = torch.randint(0, 256, (32, 64, 3), dtype=torch.uint8)
    exact = Image.frombytes("RGB", (64, 32), bytes(raw.flatten().tolist()))
    grey = Image.new("L", (10, 40), 9)  # non-RGB input is converted
    batch, boxes = preprocess([exact, grey], imgsz=64, dtype=torch.float16)
    assert batch.shape == (2, 3, 64, 64) and batch.dtype == torch.float16
    assert boxes[0].scale == 1.0
    expected = raw.permute(2, 0, 1).float() / 255
    assert torch.allclose(batch[0, :, :32, :].float(), expected, atol=1e-3)
    assert (boxes[1].new_w, boxes[1].new_h) == (16, 64)
    assert torch.allclose(batch[1, :, :, :16].float(), torch.tensor(9 / 255), atol=1e-3)


def test_preprocess_rounds_imgsz_and_refuses_no_images() -> None:
    batch, (box,) = preprocess([Image.new("RGB", (50, 50))], imgsz=100)
    assert batch.shape[-2:] == (128, 128) and box.imgsz == 128
    with pytest.raises(UsageError):
        preprocess([], imgsz=64)


def test_preprocess_of_the_sample_image_is_in_range() -> None:
    batch, (box,) = preprocess([decode_image(SAMPLE_IMAGE)], imgsz=640, pad="center")
    assert batch.shape == (1, 3, 640, 640)
    assert float(batch.min()) >= 0.0 and float(batch.max()) <= 1.0
    assert (box.new_w, box.new_h, box.pad_y) == (640, 426, 107)


# ---- postprocess ----------------------------------------------------------------------------


def _prediction(
    box: Letterbox, boxes: list[list[float]], scores: list[list[float]]
) -> torch.Tensor:
    """(4+nc, A): the given original-pixel boxes mapped into the input, plus 5 silent anchors."""
    xyxy = box.to_input(torch.tensor(boxes, dtype=torch.float32))
    cls = torch.tensor(scores, dtype=torch.float32)
    silent_boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0]]).repeat(5, 1)
    silent = torch.zeros(5, NC)
    return torch.cat([torch.cat([xyxy, silent_boxes]), torch.cat([cls, silent])], dim=1).T


@pytest.mark.parametrize("pad", ["topleft", "center"])
def test_boxes_round_trip_through_the_letterbox(pad: str) -> None:
    box = Letterbox.fit(1280, 852, 640, pad)  # type: ignore[arg-type]
    truth = [[100.0, 200.0, 400.0, 700.0], [900.0, 50.0, 1200.0, 300.0]]
    pred = _prediction(box, truth, [[0.9, 0, 0], [0, 0.8, 0]])[None]
    (det,) = postprocess(pred, [box])
    assert isinstance(det, Detections)
    assert torch.allclose(det.boxes, torch.tensor(truth), atol=1e-3)
    assert det.scores.tolist() == pytest.approx([0.9, 0.8])
    assert det.classes.tolist() == [0, 1] and det.classes.dtype == torch.int64


def test_nms_suppresses_overlaps_of_one_class_only() -> None:
    box = Letterbox.fit(640, 640, 640)
    boxes = [[10, 10, 110, 110], [12, 12, 112, 112], [10, 10, 110, 110], [300, 300, 400, 400]]
    scores = [[0.9, 0, 0], [0.7, 0, 0], [0, 0, 0.6], [0.5, 0, 0]]
    (det,) = postprocess(_prediction(box, boxes, scores)[None], [box], iou=0.45)
    assert det.scores.tolist() == pytest.approx([0.9, 0.6, 0.5])
    assert det.classes.tolist() == [0, 2, 0]
    (loose,) = postprocess(_prediction(box, boxes, scores)[None], [box], iou=0.99)
    assert len(loose.scores) == 4


def test_one_anchor_can_yield_several_classes() -> None:
    box = Letterbox.fit(640, 640, 640)
    (det,) = postprocess(_prediction(box, [[10, 10, 50, 50]], [[0.6, 0.3, 0.9]])[None], [box])
    assert det.classes.tolist() == [2, 0, 1]


def test_confidence_threshold_and_class_filter() -> None:
    box = Letterbox.fit(640, 640, 640)
    boxes = [[0, 0, 50, 50], [100, 100, 150, 150], [200, 200, 250, 250]]
    pred = _prediction(box, boxes, [[0.3, 0, 0], [0, 0.25, 0], [0, 0, 0.2]])[None]
    (det,) = postprocess(pred, [box], conf=0.25)  # strictly above conf
    assert det.classes.tolist() == [0]
    (det,) = postprocess(pred, [box], conf=0.1, classes=[1, 2])
    assert det.classes.tolist() == [1, 2]


def test_max_det_keeps_the_best() -> None:
    box = Letterbox.fit(640, 640, 640)
    boxes = [[i * 20.0, 0.0, i * 20.0 + 15, 15.0] for i in range(30)]  # disjoint
    scores = [[0.3 + i / 100, 0, 0] for i in range(30)]
    pred = _prediction(box, boxes, scores)[None]
    (det,) = postprocess(pred, [box], max_det=5)
    assert det.scores.tolist() == pytest.approx([0.59, 0.58, 0.57, 0.56, 0.55])


def test_candidate_cap_applies_before_nms() -> None:
    box = Letterbox.fit(640, 640, 640)
    # Ten near-duplicates of one box outscore three disjoint boxes; capping the candidates at ten
    # leaves only the duplicates, which NMS folds into one detection.
    boxes = [[10.0, 10.0, 100.0 + i, 100.0] for i in range(10)]
    boxes += [[200.0 + 60 * i, 200.0, 250.0 + 60 * i, 250.0] for i in range(3)]
    scores = [[0.9 - i / 100, 0, 0] for i in range(10)] + [[0.5, 0, 0]] * 3
    pred = _prediction(box, boxes, scores)[None]
    (det,) = postprocess(pred, [box], max_det=3)
    assert det.scores.tolist() == pytest.approx([0.9, 0.5, 0.5])
    (det,) = postprocess(pred, [box], max_det=3, max_candidates=10)
    assert det.scores.tolist() == pytest.approx([0.9])


def test_empty_predictions() -> None:
    box = Letterbox.fit(320, 240, 320)
    (det,) = postprocess(torch.zeros(1, 4 + NC, 0), [box])
    assert det.boxes.shape == (0, 4) and det.scores.shape == (0,) and det.classes.shape == (0,)
    (det,) = postprocess(torch.zeros(1, 4 + NC, 50), [box])  # all below conf
    assert det.boxes.shape == (0, 4)


def test_boxes_are_clipped_and_degenerate_rows_dropped() -> None:
    box = Letterbox.fit(200, 100, 64, "center")
    boxes = [
        [-50.0, -10.0, 120.0, 80.0],  # sticks out: clipped
        [210.0, 10.0, 260.0, 50.0],  # wholly right of the image: zero area after clipping
        [float("nan"), 0.0, 10.0, 10.0],  # non-finite
    ]
    (det,) = postprocess(_prediction(box, boxes, [[0.9, 0, 0]] * 3)[None], [box])
    assert det.boxes.tolist() == [pytest.approx([0.0, 0.0, 120.0, 80.0], abs=1e-3)]


def test_batch_with_different_letterboxes_and_half_precision() -> None:
    a = Letterbox.fit(1280, 852, 640, "center")
    b = Letterbox.fit(300, 600, 640, "center")
    pa = _prediction(a, [[10, 20, 300, 400]], [[0, 0.9, 0]])
    pb = _prediction(b, [[5, 5, 100, 500], [150, 10, 290, 90]], [[0.8, 0, 0], [0, 0, 0.7]])
    pa = torch.cat([pa, torch.zeros(4 + NC, 1)], dim=1)  # same anchor count for both
    dets = postprocess(torch.stack([pa, pb]).half(), [a, b])
    assert len(dets) == 2
    assert torch.allclose(dets[0].boxes, torch.tensor([[10.0, 20.0, 300.0, 400.0]]), atol=1.0)
    assert dets[1].classes.tolist() == [0, 2]
    expected = torch.tensor([[5.0, 5.0, 100.0, 500.0], [150.0, 10.0, 290.0, 90.0]])
    assert torch.allclose(dets[1].boxes, expected, atol=1.0)


def test_postprocess_rejects_mismatched_inputs() -> None:
    box = Letterbox.fit(64, 64, 64)
    with pytest.raises(UsageError):
        postprocess(torch.zeros(2, 4 + NC, 10), [box])
    with pytest.raises(UsageError):
        postprocess(torch.zeros(1, 4, 10), [box])
