"""YOLOv9 loss: CIoU, target padding, candidate mask, the task-aligned assigner and the terms."""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor

from libreyolo.workload.yolo9.loss import (
    YOLOv9Loss,
    assign,
    candidate_mask,
    candidate_mask_by_sides,
    ciou,
    dfl_cross_entropy,
    dfl_loss,
    fit_rows,
    pad_targets,
)
from libreyolo.workload.yolo9.model import TrainOutput, make_anchors

STRIDES = (8, 16, 32)
NC = 3


def grid(h: int, w: int) -> tuple[Tensor, Tensor]:
    """Anchor centres (A, 2) in cells and strides (A, 1) of an h x w input."""
    shapes = [torch.empty(0, 0, h // s, w // s) for s in STRIDES]
    return make_anchors(shapes, STRIDES)


def padded(*boxes: tuple[float, float, float, float, float]) -> Tensor:
    """(1, T, 5) targets of one image: rows (class, x1, y1, x2, y2) in pixels."""
    return torch.tensor([boxes], dtype=torch.float32).reshape(1, -1, 5)


def random_maps(batch: int, h: int, w: int, seed: int = 0) -> list[Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(batch, 64 + NC, h // s, w // s, generator=g) * 2).requires_grad_()
        for s in STRIDES
    ]


ROWS = torch.tensor(
    [
        [1, 2, 10, 20, 60, 90],
        [0, 0, 0, 0, 128, 128],
        [0, 1, 30, 30, 34, 33],  # smaller than a cell: no anchor inside
        [1, 2, 64, 64, 120, 100],
        [0, 1, 70, 5, 125, 60],
    ],
    dtype=torch.float32,
)


# -- CIoU ----------------------------------------------------------------------------------------


def test_ciou_of_identical_boxes_is_one() -> None:
    boxes = torch.tensor([[0.0, 0.0, 10.0, 20.0], [5.0, 5.0, 6.0, 9.0], [3.0, 1.0, 300.0, 200.0]])
    assert torch.allclose(ciou(boxes, boxes), torch.ones(3), atol=1e-5)


def test_ciou_penalises_distance_and_is_symmetric() -> None:
    a = torch.tensor([0.0, 0.0, 10.0, 10.0])
    near, far = torch.tensor([2.0, 0.0, 12.0, 10.0]), torch.tensor([50.0, 50.0, 60.0, 60.0])
    assert 0 < ciou(a, near) < 1
    assert ciou(a, far) < 0  # disjoint: IoU 0 minus the centre-distance term
    assert torch.isclose(ciou(a, near), ciou(near, a))


# -- target padding ------------------------------------------------------------------------------


def test_pad_targets_pads_only_to_the_batch_maximum() -> None:
    out = pad_targets(ROWS, 3)
    assert out.shape == (3, 3, 5)  # image 0 has 3 boxes, image 1 has 2, image 2 none
    assert out[0, :, 0].tolist() == [0, 1, 1]  # input order kept within an image
    assert out[1, :2, 1:].tolist() == [[10, 20, 60, 90], [64, 64, 120, 100]]
    assert out[1, 2].tolist() == [-1, 0, 0, 0, 0]
    assert (out[2, :, 0] == -1).all()


def test_pad_targets_without_boxes_has_width_zero() -> None:
    assert pad_targets(torch.zeros(0, 6), 4).shape == (4, 0, 5)


def test_pad_targets_rejects_bad_rows() -> None:
    with pytest.raises(ValueError, match="image indices"):
        pad_targets(ROWS, 1)
    with pytest.raises(ValueError, match=r"\(N, 6\)"):
        pad_targets(torch.zeros(3, 5), 1)


# -- candidate mask ------------------------------------------------------------------------------


def test_candidates_are_anchor_centres_inside_the_box() -> None:
    points, stride = grid(64, 64)
    mask = candidate_mask(padded((0, 0, 0, 16, 16)), points, stride, 16)[0, 0]
    centres = (points * stride)[mask]
    # stride 8: (4|12, 4|12); stride 16: (8, 8); stride 32: (16, 16) on the box edge counts
    assert sorted(map(tuple, centres.tolist())) == [
        (4, 4), (4, 12), (8, 8), (12, 4), (12, 12), (16, 16)
    ]  # fmt: skip


def test_candidates_respect_the_reg_max_reach() -> None:
    points, stride = grid(256, 256)
    mask = candidate_mask(padded((0, 0, 0, 256, 256)), points, stride, 16)[0, 0]
    per_stride = [int(m.sum()) for m in torch.split(mask, [32 * 32, 16 * 16, 8 * 8])]
    # reach 14.99 cells: stride 8 none (every centre is >= 16 cells from some side), stride 16 only
    # centres 24..232 px (14 x 14), stride 32 all
    assert per_stride == [0, 196, 64]


def test_padding_rows_match_nothing() -> None:
    points, stride = grid(64, 64)
    gt = padded((-1, 0, 0, 0, 0), (-1, 0, 0, 64, 64))
    assert not candidate_mask(gt, points, stride, 16).any()


# -- assigner ------------------------------------------------------------------------------------


def run_assign(gt: Tensor, boxes: Tensor, size: int = 64, topk: int = 10) -> tuple[Tensor, ...]:
    points, stride = grid(size, size)
    logits = torch.zeros(1, points.shape[0], NC)
    found = assign(logits, boxes, gt, candidate_mask(gt, points, stride, 16), topk=topk)
    return found.positive[0], found.weight[0], found.cls[0], found.boxes[0]


def test_one_gt_takes_every_candidate_when_fewer_than_k() -> None:
    gt = padded((2, 0, 0, 16, 16))
    perfect = gt[:, :, 1:].expand(1, 84, 4)  # every anchor predicts the GT box exactly
    positive, weight, cls, boxes = run_assign(gt, perfect)
    points, stride = grid(64, 64)
    expected = candidate_mask(gt, points, stride, 16)[0, 0]
    assert torch.equal(positive, expected)  # the 6 candidates, nothing outside the box
    assert torch.allclose(weight[positive], torch.ones(6), atol=1e-4)  # max IoU 1, equal scores
    assert (cls[positive].argmax(-1) == 2).all() and (cls[~positive] == 0).all()
    assert torch.equal(boxes[positive], gt[0, :, 1:].expand(6, 4))


def test_top_k_keeps_the_best_aligned_candidates() -> None:
    gt = padded((0, 0, 0, 64, 64))
    points, stride = grid(64, 64)
    # IoU falls with the anchor index: anchor i predicts the GT box shrunk by i / 100 px per side
    shrink = torch.arange(84, dtype=torch.float32)[:, None] / 100 * torch.tensor([1, 1, -1, -1])
    positive, weight, _, _ = run_assign(gt, (gt[0, :, 1:] + shrink)[None], topk=10)
    candidates = candidate_mask(gt, points, stride, 16)[0, 0].nonzero().flatten()
    assert candidates.numel() > 10
    assert positive.nonzero().flatten().tolist() == candidates[:10].tolist()
    assert weight.max() == pytest.approx(float(ciou(gt[0, 0, 1:], gt[0, 0, 1:] + shrink[0])), 1e-5)


def test_gt_without_candidates_gets_its_best_anchor() -> None:
    gt = padded((1, 1, 1, 3, 3))  # between anchor centres at every stride
    far = torch.tensor([[40.0, 40.0, 50.0, 50.0]]).expand(84, 4).clone()
    far[5] = torch.tensor([0.0, 0.0, 4.0, 4.0])  # only anchor 5 overlaps it
    positive, weight, _, _ = run_assign(gt, far[None])
    assert positive.nonzero().flatten().tolist() == [5]
    assert weight[5] > 0


def test_an_anchor_claimed_twice_keeps_the_gt_it_overlaps_most() -> None:
    gt = padded((0, 0, 0, 16, 16), (1, 0, 0, 16, 20))
    pred = torch.tensor([0.0, 0.0, 16.0, 16.0]).expand(1, 84, 4)  # equals GT 0 exactly
    positive, _, cls, boxes = run_assign(gt, pred)
    points, stride = grid(64, 64)
    cand0, cand1 = candidate_mask(gt, points, stride, 16)[0]
    assert cand0.sum() == 6 and (cand1 & ~cand0).sum() == 2  # GT 1 reaches the y = 20 row too
    assert torch.equal(positive, cand0 | cand1)  # every anchor keeps exactly one GT
    assert (cls[cand0].argmax(-1) == 0).all() and (boxes[cand0] == gt[0, 0, 1:]).all()
    assert (cls[cand1 & ~cand0].argmax(-1) == 1).all()


def test_padding_rows_do_not_change_the_assignment() -> None:
    gt = padded((2, 0, 0, 16, 16), (1, 20, 20, 60, 50))
    pad = torch.cat((gt, padded((-1, 0, 0, 0, 0), (-1, 0, 0, 0, 0))), 1)
    pred = torch.rand(1, 84, 2) * 30
    pred = torch.cat((pred, pred + 20), -1)
    for a, b in zip(run_assign(gt, pred), run_assign(pad, pred), strict=True):
        assert torch.equal(a, b)


# -- DFL -----------------------------------------------------------------------------------------


def test_dfl_is_small_on_exact_integer_targets() -> None:
    target = torch.tensor([[[0.0, 3.0, 7.0, 14.0]]])
    logits = torch.full((1, 1, 4, 16), -20.0).scatter(-1, target.long()[..., None], 20.0)
    assert dfl_loss(logits.log_softmax(-1), target).item() < 1e-6


def test_dfl_splits_fractional_targets_between_neighbours() -> None:
    target = torch.full((1, 1, 4), 3.5)
    logits = torch.full((1, 1, 4, 16), -30.0)
    logits[..., 3:5] = 0.0  # half the mass on bins 3 and 4: the best fit for 3.5
    best = dfl_loss(logits.log_softmax(-1), target).item()
    assert best == pytest.approx(math.log(2), abs=1e-5)
    shifted = torch.full((1, 1, 4, 16), -30.0)
    shifted[..., 4:6] = 0.0
    assert dfl_loss(shifted.log_softmax(-1), target).item() > best


# -- the loss ------------------------------------------------------------------------------------


def test_loss_is_finite_positive_and_differentiable() -> None:
    maps = random_maps(2, 128, 128)
    total, parts = YOLOv9Loss(NC)(maps, ROWS[ROWS[:, 0] < 2], (128, 128))
    assert torch.isfinite(total) and total > 0
    assert set(parts) == {"box", "dfl", "cls", "num_fg"}
    assert torch.isclose(parts["box"] + parts["dfl"] + parts["cls"], total)
    assert all(p.grad_fn is None for p in parts.values())
    torch.autograd.backward(total)
    assert all(m.grad is not None and torch.isfinite(m.grad).all() for m in maps)


def test_batch_without_targets_has_only_a_class_term() -> None:
    maps = random_maps(2, 64, 96)
    total, parts = YOLOv9Loss(NC)(maps, torch.zeros(0, 6), (64, 96))
    assert parts["box"] == 0 and parts["dfl"] == 0 and parts["num_fg"] == 0
    assert parts["cls"] > 0
    torch.autograd.backward(total)  # the zero terms keep the graph
    assert maps[0].grad is not None


def test_padding_width_does_not_change_the_loss() -> None:
    maps = random_maps(2, 128, 128)
    loss = YOLOv9Loss(NC)
    trimmed = pad_targets(ROWS, 2)
    wide = torch.zeros(2, 300, 5)  # libreyolo 1.6.0's fixed width
    wide[..., 0] = -1
    wide[:, : trimmed.shape[1]] = trimmed
    from_rows, _ = loss(maps, ROWS, (128, 128))
    assert torch.isclose(loss(maps, trimmed)[0], from_rows)
    assert torch.isclose(loss(maps, wide)[0], from_rows, rtol=1e-6)


def test_aux_head_adds_a_quarter_of_its_own_terms() -> None:
    main, aux = random_maps(2, 64, 64, seed=1), random_maps(2, 64, 64, seed=2)
    loss = YOLOv9Loss(NC)
    rows = torch.tensor([[0, 1, 8, 8, 40, 30], [1, 0, 20, 10, 60, 60]], dtype=torch.float32)
    _, both = loss(TrainOutput(main, aux), rows)
    _, only_main = loss(TrainOutput(main, None), rows)
    _, only_aux = loss(aux, rows)
    for name in ("box", "dfl", "cls"):
        expected = only_main[name] + 0.25 * only_aux[name]
        assert torch.isclose(both[name], expected, rtol=1e-5)
    assert both["num_fg"] == only_main["num_fg"]


def test_loss_runs_in_fp32_under_autocast() -> None:
    maps = [m.detach().bfloat16().requires_grad_() for m in random_maps(1, 64, 64)]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        total, _ = YOLOv9Loss(NC)(maps, torch.tensor([[0, 1, 8, 8, 40, 30.0]]))
    assert total.dtype == torch.float32 and torch.isfinite(total)


def test_anchor_grid_follows_the_input_size() -> None:
    loss = YOLOv9Loss(NC)
    rows = torch.tensor([[0, 1, 8, 8, 40, 30.0]])
    for h, w in ((64, 64), (96, 64), (64, 64)):
        total, _ = loss(random_maps(1, h, w), rows, (h, w))
        assert torch.isfinite(total)


def test_maps_that_do_not_fit_are_refused() -> None:
    loss = YOLOv9Loss(NC)
    with pytest.raises(ValueError, match="expected"):
        loss(random_maps(1, 64, 64)[:2], ROWS[:0])
    with pytest.raises(ValueError, match="does not match"):
        loss(random_maps(1, 64, 64), ROWS[:0], (64, 96))
    with pytest.raises(ValueError, match="expected"):
        YOLOv9Loss(NC + 1)(random_maps(1, 64, 64), ROWS[:0])


# -- 1.6.0's arithmetic and the vectorised_assigner variant's: the same values ------------------


def test_both_candidate_masks_agree() -> None:
    points, stride = grid(128, 96)
    gt = fit_rows(pad_targets(ROWS, 2), 7)  # with padding rows
    gt = torch.cat((gt, padded((-1, 0, 0, 96, 128)).expand(2, 1, 5)), 1)  # a padding row's box
    by_sides = candidate_mask_by_sides(gt, points, stride, 16)
    assert by_sides.any() and torch.equal(by_sides, candidate_mask(gt, points, stride, 16))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_both_assigners_agree(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    points, stride = grid(128, 96)
    gt = fit_rows(pad_targets(ROWS, 2), 9)
    centres = (points * stride).repeat(1, 2)
    boxes = (
        centres
        + torch.randn(2, points.shape[0], 4, generator=g) * 12
        + torch.tensor([-10.0, -10.0, 10.0, 10.0])
    )  # boxes near each anchor: many overlap several targets, so duplicates get settled
    logits = torch.randn(2, points.shape[0], NC, generator=g)
    mask = candidate_mask(gt, points, stride, 16)
    fast = assign(logits, boxes, gt, mask, vectorised=True)
    as_1_6_0 = assign(logits, boxes, gt, mask, vectorised=False)
    assert fast.positive.sum() > 10
    for ours, theirs in zip(fast, as_1_6_0, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0)


def test_dfl_cross_entropy_is_dfl_loss() -> None:
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(5, 4, 16, generator=g)
    target = torch.rand(5, 4, generator=g) * 14.99
    torch.testing.assert_close(
        dfl_cross_entropy(logits, target), dfl_loss(logits.log_softmax(-1), target)
    )


@pytest.mark.parametrize("rows", [ROWS, ROWS[:0]], ids=["boxes", "no boxes"])
def test_both_arithmetics_give_the_same_loss_and_gradients(rows: Tensor) -> None:
    targets = fit_rows(pad_targets(rows, 2), 300)
    results = []
    for vectorised in (False, True):
        main, aux = random_maps(2, 128, 96, seed=4), random_maps(2, 128, 96, seed=5)
        loss = YOLOv9Loss(NC, STRIDES, 16, vectorised=vectorised)
        total, parts = loss(TrainOutput(main, aux), targets, (128, 96))
        results.append((total, parts, torch.autograd.grad(total, [*main, *aux])))
    (total, parts, grads), (fast_total, fast_parts, fast_grads) = results
    torch.testing.assert_close(total, fast_total)
    for name in ("box", "dfl", "cls", "num_fg"):
        torch.testing.assert_close(parts[name], fast_parts[name])
    for grad, fast_grad in zip(grads, fast_grads, strict=True):
        torch.testing.assert_close(grad, fast_grad)
    assert (parts["num_fg"] > 0) == (rows.shape[0] > 0)
