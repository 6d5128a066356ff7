"""The YOLOX loss on hand-built raw maps: its value where it can be computed by hand, its
gradients, its agreement with SimOTA's assignment, the L1 switch and the padding rule."""

from __future__ import annotations

import math

import torch

from libreyolo.workload.yolox.loss import (
    YOLOXLoss,
    decode_boxes,
    flatten_outputs,
    iou_loss,
    l1_target,
)
from libreyolo.workload.yolox.simota import simota_assign

NC = 3
IMGSZ = 64
STRIDES = (8, 16, 32)
ANCHORS = 8 * 8 + 4 * 4 + 2 * 2


def raw_maps(batch: int = 2, seed: int = 0, grad: bool = True) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    maps = [torch.randn(batch, 5 + NC, IMGSZ // s, IMGSZ // s, generator=gen) for s in STRIDES]
    return [m.requires_grad_(grad) for m in maps]


def padded(rows: list[list[list[float]]], slots: int = 50) -> torch.Tensor:
    out = torch.zeros(len(rows), slots, 5)
    for i, image in enumerate(rows):
        if image:
            out[i, : len(image)] = torch.tensor(image)
    return out


TARGETS = [
    [[0, 20.0, 20.0, 16.0, 24.0], [2, 44.0, 40.0, 30.0, 20.0]],
    [[1, 32.0, 32.0, 48.0, 40.0]],
]


def test_iou_loss_is_one_minus_iou_squared() -> None:
    target = torch.tensor([[4.0, 4.0, 8.0, 8.0]] * 3)
    pred = torch.tensor([[4.0, 4.0, 8.0, 8.0], [4.0, 4.0, 4.0, 4.0], [40.0, 4.0, 8.0, 8.0]])
    torch.testing.assert_close(iou_loss(pred, target), torch.tensor([0.0, 1 - 0.25**2, 1.0]))


def test_flatten_and_decode_follow_the_grid() -> None:
    maps = raw_maps(batch=1, grad=False)
    raw, grid, strides = flatten_outputs(maps, STRIDES)
    assert raw.shape == (1, ANCHORS, 5 + NC) and grid.shape == (ANCHORS, 2)
    anchor = 64 + 4 * 1 + 2  # stride 16, cell x=2, y=1
    assert grid[anchor].tolist() == [2.0, 1.0] and strides[anchor] == 16
    torch.testing.assert_close(raw[0, anchor], maps[1][0, :, 1, 2])
    box = decode_boxes(raw, grid, strides)[0, anchor]
    r = maps[1][0, :4, 1, 2]
    expected = torch.tensor(
        [(r[0] + 2) * 16, (r[1] + 1) * 16, math.exp(r[2]) * 16, math.exp(r[3]) * 16]
    )
    torch.testing.assert_close(box, expected)
    # The L1 target inverts the decode: a box decoded from raw r gives back r.
    back = l1_target(box[None], grid[anchor : anchor + 1], strides[anchor : anchor + 1])
    torch.testing.assert_close(back[0], r, atol=1e-5, rtol=1e-5)


def test_an_image_without_targets_has_only_the_objectness_term() -> None:
    maps = [torch.zeros(1, 5 + NC, IMGSZ // s, IMGSZ // s, requires_grad=True) for s in STRIDES]
    total, parts = YOLOXLoss(NC)(maps, padded([[]]))
    # Every anchor is background with logit 0: BCE = ln 2 each, divided by max(num_fg, 1) = 1.
    torch.testing.assert_close(parts["obj"], torch.tensor(ANCHORS * math.log(2)))
    assert parts["iou"] == parts["cls"] == parts["l1"] == parts["num_fg"] == 0
    torch.testing.assert_close(total, parts["obj"])
    total.backward()
    assert maps[0].grad is not None and maps[0].grad[:, 4].abs().sum() > 0


def test_loss_is_finite_differentiable_and_sums_its_parts() -> None:
    maps = raw_maps()
    total, parts = YOLOXLoss(NC)(maps, padded(TARGETS))
    assert total.ndim == 0 and torch.isfinite(total)
    assert set(parts) == {"iou", "obj", "cls", "l1", "num_fg"}
    assert all(not p.requires_grad for p in parts.values())
    assert parts["l1"] == 0 and parts["iou"] > 0 and parts["cls"] > 0
    torch.testing.assert_close(total.detach(), parts["iou"] + parts["obj"] + parts["cls"])
    total.backward()
    for m in maps:
        assert m.grad is not None and torch.isfinite(m.grad).all()
    # Every channel learns somewhere: boxes and classes at positives, objectness everywhere.
    per_channel = sum(m.grad.abs().sum(dim=(0, 2, 3)) for m in maps if m.grad is not None)
    assert isinstance(per_channel, torch.Tensor) and (per_channel > 0).all()


def test_num_fg_is_the_assignments_positive_count() -> None:
    maps = raw_maps(grad=False)
    _, parts = YOLOXLoss(NC)(maps, padded(TARGETS))
    raw, grid, strides = flatten_outputs(maps, STRIDES)
    boxes = decode_boxes(raw, grid, strides)
    expected = 0
    for i, rows in enumerate(TARGETS):
        gt = torch.tensor(rows)
        a = simota_assign(
            gt[:, 1:], gt[:, 0], boxes[i], raw[i, :, 5:], raw[i, :, 4:5], grid, strides
        )
        expected += a.num_fg
    assert expected > 0 and parts["num_fg"] == expected


def test_use_l1_adds_a_positive_l1_term_and_changes_nothing_else() -> None:
    maps = raw_maps(grad=False)
    targets = padded(TARGETS)
    plain_total, plain = YOLOXLoss(NC)(maps, targets)
    l1_total, with_l1 = YOLOXLoss(NC, use_l1=True)(maps, targets)
    assert with_l1["l1"] > 0
    for key in ("iou", "obj", "cls", "num_fg"):
        torch.testing.assert_close(with_l1[key], plain[key])
    torch.testing.assert_close(l1_total, plain_total + with_l1["l1"])


def test_zero_padding_rows_are_ignored() -> None:
    maps = raw_maps(grad=False)
    loss = YOLOXLoss(NC, use_l1=True)
    total_50, parts_50 = loss(maps, padded(TARGETS, slots=50))
    total_60, parts_60 = loss(maps, padded(TARGETS, slots=60))
    torch.testing.assert_close(total_50, total_60)
    for key, value in parts_50.items():
        torch.testing.assert_close(value, parts_60[key])


def test_the_loss_is_normalised_by_the_positive_count() -> None:
    # Doubling the batch with an identical image doubles every sum and num_fg: the loss stays.
    maps = raw_maps(batch=1, grad=False)
    single, _ = YOLOXLoss(NC)(maps, padded(TARGETS[:1]))
    doubled, parts = YOLOXLoss(NC)([torch.cat((m, m)) for m in maps], padded(TARGETS[:1] * 2))
    torch.testing.assert_close(doubled, single)
    assert parts["num_fg"] > 0


def test_half_precision_maps_give_a_float32_loss_close_to_float32_maps() -> None:
    maps = raw_maps(grad=False)
    loss = YOLOXLoss(NC, use_l1=True)
    reference, ref_parts = loss(maps, padded(TARGETS))
    half = [m.half().requires_grad_() for m in maps]
    total, parts = loss(half, padded(TARGETS))
    assert total.dtype == torch.float32 and parts["num_fg"] == ref_parts["num_fg"]
    torch.testing.assert_close(total, reference, rtol=1e-3, atol=1e-2)
    total.backward()
    assert half[0].grad is not None and half[0].grad.dtype == torch.float16
