"""SimOTA on hand-computed cases: a 3 × 3 grid at stride 8 (a 24-pixel input), 2 classes.

Anchor a = 3·row + col has its centre at ((col + 0.5)·8, (row + 0.5)·8) = 4, 12 or 20 pixels.
Predicted boxes are given already decoded, so each IoU is chosen exactly.
"""

from __future__ import annotations

import math

import torch

from libreyolo.workload.yolox.simota import (
    assignment_cost,
    geometry_prior,
    pairwise_iou,
    simota_assign,
)

NC = 2
GRID = torch.tensor([[x, y] for y in range(3) for x in range(3)], dtype=torch.float32)
STRIDES = torch.full((9,), 8.0)
FAR = torch.tensor([100.0, 100.0, 1.0, 1.0])  # a prediction overlapping nothing


def logits(n: int = 9) -> tuple[torch.Tensor, torch.Tensor]:
    """Zero logits: σ = 0.5 for class and objectness, so every anchor's class cost is 2·ln 2."""
    return torch.zeros(n, NC), torch.zeros(n, 1)


def scaled(box: torch.Tensor, side: float) -> torch.Tensor:
    """The same centre, sides × `side`: IoU with `box` is side²."""
    return torch.cat((box[:2], box[2:] * side))


def test_pairwise_iou_of_cxcywh_boxes() -> None:
    a = torch.tensor([[4.0, 4.0, 8.0, 8.0]])
    b = torch.tensor(
        [[4.0, 4.0, 8.0, 8.0], [8.0, 4.0, 8.0, 8.0], [4.0, 4.0, 4.0, 4.0], [40.0, 4, 8, 8]]
    )
    torch.testing.assert_close(pairwise_iou(a, b), torch.tensor([[1.0, 1 / 3, 0.25, 0.0]]))


def test_prior_is_strictly_within_1_5_strides_of_the_gt_centre() -> None:
    gt = torch.tensor([[4.0, 4.0, 8.0, 8.0], [12.0, 12.0, 40.0, 40.0]])
    near, in_prior = geometry_prior(gt, GRID, STRIDES)
    # GT 0 at (4, 4): centres 4 and 12 are within 12 px, 20 is not (16 away).
    # GT 1 at (12, 12): every centre is 8 px away at most; its large size does not matter.
    assert near.all()
    assert in_prior[0].nonzero().flatten().tolist() == [0, 1, 3, 4]
    assert in_prior[1].all()
    # Exactly 12 px away (1.5 strides) is outside: the rule is strict.
    edge, _ = geometry_prior(torch.tensor([[16.0, 4.0, 8.0, 8.0]]), GRID, STRIDES)
    assert edge.nonzero().flatten().tolist() == [1, 2, 4, 5]  # centre x 4 is 12 px away


def test_cost_is_class_bce_plus_3_neg_log_iou_plus_1e6_outside() -> None:
    cls, obj = logits(2)
    ious = torch.tensor([[1.0, 0.5]])
    in_prior = torch.tensor([[True, False]])
    cost = assignment_cost(torch.tensor([1.0]), cls, obj, ious, in_prior)
    # √(0.5·0.5) = 0.5 for both classes: BCE = −ln 0.5 for the true class and for the other.
    base = 2 * math.log(2)
    expected = torch.tensor(
        [[base - 3 * math.log(1 + 1e-8), base - 3 * math.log(0.5 + 1e-8) + 1e6]]
    )
    torch.testing.assert_close(cost, expected)


def test_one_gt_candidates_dynamic_k_and_assignment() -> None:
    gt = torch.tensor([[4.0, 4.0, 8.0, 8.0]])
    preds = FAR.repeat(9, 1)
    # Candidates are anchors 0, 1, 3, 4; their IoUs 1.0, 0.81, 0.49, 0.04 sum to 2.34: k = 2.
    for anchor, side in ((0, 1.0), (1, 0.9), (3, 0.7), (4, 0.2)):
        preds[anchor] = scaled(gt[0], side)
    preds[8] = gt[0]  # a perfect box outside the prior is never a candidate
    cls, obj = logits()
    a = simota_assign(gt, torch.tensor([1.0]), preds, cls, obj, GRID, STRIDES)
    assert a.fg_mask.nonzero().flatten().tolist() == [0, 1]
    assert a.num_fg == 2
    assert a.matched_gt.tolist() == [0, 0]
    assert a.matched_classes.tolist() == [1.0, 1.0]
    torch.testing.assert_close(a.matched_ious, torch.tensor([1.0, 0.81]))


def test_dynamic_k_is_at_least_one() -> None:
    gt = torch.tensor([[12.0, 12.0, 8.0, 8.0]])
    preds = FAR.repeat(9, 1)
    preds[4] = scaled(gt[0], 0.5)  # the best IoU is 0.25: int(0.25) = 0, clamped to 1
    cls, obj = logits()
    a = simota_assign(gt, torch.tensor([0.0]), preds, cls, obj, GRID, STRIDES)
    assert a.fg_mask.nonzero().flatten().tolist() == [4]
    torch.testing.assert_close(a.matched_ious, torch.tensor([0.25]))


def test_an_anchor_claimed_by_two_gts_goes_to_the_lower_cost_one() -> None:
    # GT 0 and GT 1 overlap; anchor 4's prediction is GT 1 exactly (IoU 0.64 with GT 0).
    gt = torch.tensor([[12.0, 12.0, 8.0, 8.0], [12.0, 12.0, 10.0, 10.0]])
    preds = FAR.repeat(9, 1)
    preds[4] = gt[1]
    cls, obj = logits()
    ious = pairwise_iou(gt, preds[4:5])
    torch.testing.assert_close(ious, torch.tensor([[0.64], [1.0]]))
    # Both GTs take one anchor (k = max(1, int(sum of IoUs))), the same cheapest anchor 4.
    a = simota_assign(gt, torch.tensor([0.0, 1.0]), preds, cls, obj, GRID, STRIDES)
    assert a.num_fg == 1
    assert a.fg_mask.nonzero().flatten().tolist() == [4]
    assert a.matched_gt.tolist() == [1]  # −ln 1 < −ln 0.64: GT 1 wins although listed second
    assert a.matched_classes.tolist() == [1.0]
    torch.testing.assert_close(a.matched_ious, torch.tensor([1.0]))


def test_class_cost_can_outweigh_a_slightly_better_iou() -> None:
    gt = torch.tensor([[12.0, 12.0, 8.0, 8.0]])
    preds = FAR.repeat(9, 1)
    preds[1] = gt[0]  # IoU 1
    preds[4] = scaled(gt[0], 0.99)  # IoU 0.9801; the sum 1.98 gives k = 1
    cls, obj = logits()
    cls[1, 0] = 4.0  # anchor 1 is confident in class 0: class cost −ln(1 − 0.70) − ln 0.5 ≈ 1.90
    cls[4, 1] = 4.0  # anchor 4 in class 1, the GT's: −ln 0.70 − ln 0.5 ≈ 1.05
    # IoU costs differ by only 3·(−ln 0.9801) ≈ 0.06, so anchor 4 is the cheaper.
    a = simota_assign(gt, torch.tensor([1.0]), preds, cls, obj, GRID, STRIDES)
    assert a.fg_mask.nonzero().flatten().tolist() == [4]
    torch.testing.assert_close(a.matched_ious, torch.tensor([0.9801]))


def test_a_gt_with_no_anchor_nearby_assigns_nothing() -> None:
    gt = torch.tensor([[200.0, 200.0, 8.0, 8.0]])  # far off the 24-pixel grid
    cls, obj = logits()
    a = simota_assign(gt, torch.tensor([0.0]), FAR.repeat(9, 1), cls, obj, GRID, STRIDES)
    assert a.num_fg == 0 and not a.fg_mask.any()
    assert a.matched_gt.numel() == a.matched_ious.numel() == a.matched_classes.numel() == 0
