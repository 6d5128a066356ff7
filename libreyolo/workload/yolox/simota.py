"""SimOTA, YOLOX's label assigner, for one image at a time: pure functions of tensors.

Role: decide which anchors are positives and which ground truth each one learns, with the values
libreyolo 1.6.0 computes (`models/yolox/nn.py`, `YOLOXHead.get_assignments` and its helpers):

1. geometry prior: an anchor is a candidate for a GT when its centre ((cell + 0.5) · stride) lies
   strictly inside the square of half-side 1.5 strides around the GT centre (1.6.0 has no
   in-box rule); anchors that are candidates for no GT are left out of everything below;
2. cost[g, a] = BCE(√(σ(cls)·σ(obj)), one-hot class) summed over classes
   + 3 · (−log(IoU + 1e-8)) + 1e6 · (a outside g's prior);
3. dynamic k per GT = max(1, int(sum of its 10 best IoUs)); each GT takes its k cheapest
   anchors; an anchor taken by several GTs keeps only its cheapest.

Deliberately kept from 1.6.0, because the profile must show them: the caller loops over images
in Python, and this module syncs with the host there (`int()` of each dynamic k, the `if` on
multiple matches, `.item()` of the positive count, boolean indexing). Must not: compute losses,
keep autograd history (everything runs under no_grad), or move tensors between devices.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

CENTER_RADIUS = 1.5  # the prior's half-side, in strides
IOU_COST_WEIGHT = 3.0
OUTSIDE_COST = 1e6
IOU_LOG_EPS = 1e-8
TOPK_IOUS = 10  # dynamic k sums at most this many best IoUs


class SimOTAAssignment(NamedTuple):
    """One image's positives: a mask over all anchors and, per positive (anchor order), its GT."""

    fg_mask: Tensor  # (A,) bool
    matched_gt: Tensor  # (F,) int64 GT row of each positive
    matched_classes: Tensor  # (F,) that GT's class (the targets' dtype)
    matched_ious: Tensor  # (F,) float32 IoU of the positive's prediction with its GT
    num_fg: int


def pairwise_iou(a: Tensor, b: Tensor) -> Tensor:
    """(N, M) IoU of cxcywh boxes a (N, 4) and b (M, 4); as 1.6.0's `bboxes_iou`, no epsilon."""
    a_tl, a_br = a[:, None, :2] - a[:, None, 2:] / 2, a[:, None, :2] + a[:, None, 2:] / 2
    b_tl, b_br = b[:, :2] - b[:, 2:] / 2, b[:, :2] + b[:, 2:] / 2
    tl, br = torch.max(a_tl, b_tl), torch.min(a_br, b_br)
    overlaps = (tl < br).to(tl.dtype).prod(dim=2)
    inter = (br - tl).prod(dim=2) * overlaps
    area_a, area_b = a[:, 2:].prod(dim=1), b[:, 2:].prod(dim=1)
    return inter / (area_a[:, None] + area_b - inter)


def geometry_prior(gt_boxes: Tensor, grid: Tensor, strides: Tensor) -> tuple[Tensor, Tensor]:
    """Candidates from geometry alone: (anchors near any GT (A,) bool, in-prior (G, A_near) bool).

    gt_boxes (G, 4) cxcywh in input pixels; grid (A, 2) cell indices x, y; strides (A,).
    """
    centres = (grid + 0.5) * strides[:, None]  # (A, 2)
    radius = strides[None, :] * CENTER_RADIUS  # (1, A)
    cx, cy = gt_boxes[:, 0:1], gt_boxes[:, 1:2]  # (G, 1)
    # The four margins in 1.6.0's order of operations, so boundary cases round the same way.
    margins = torch.stack(
        (
            centres[None, :, 0] - (cx - radius),
            centres[None, :, 1] - (cy - radius),
            (cx + radius) - centres[None, :, 0],
            (cy + radius) - centres[None, :, 1],
        ),
        dim=2,
    )
    in_centre = margins.min(dim=-1).values > 0.0  # (G, A), strictly inside
    near = in_centre.any(dim=0)
    return near, in_centre[:, near]


def assignment_cost(
    gt_classes: Tensor,
    cls_logits: Tensor,
    obj_logits: Tensor,
    ious: Tensor,
    in_prior: Tensor,
) -> Tensor:
    """(G, A_near) matching cost; cls_logits (A_near, nc), obj_logits (A_near, 1) raw logits."""
    num_gt, (num_anchors, nc) = gt_classes.shape[0], cls_logits.shape
    one_hot = F.one_hot(gt_classes.long(), nc).float()
    # binary_cross_entropy refuses autocast; 1.6.0 turns it off and scores in float32.
    with torch.autocast(cls_logits.device.type, enabled=False):
        scores = (cls_logits.float().sigmoid() * obj_logits.float().sigmoid()).sqrt()
        # repeat, not expand: 1.6.0 materialises the (G, A_near, nc) pair tensors.
        cls_cost = F.binary_cross_entropy(
            scores.unsqueeze(0).repeat(num_gt, 1, 1),
            one_hot.unsqueeze(1).repeat(1, num_anchors, 1),
            reduction="none",
        ).sum(-1)
    iou_cost = -torch.log(ious + IOU_LOG_EPS)
    return cls_cost + IOU_COST_WEIGHT * iou_cost + OUTSIDE_COST * (~in_prior)


def dynamic_k_matching(
    cost: Tensor, ious: Tensor, gt_classes: Tensor, near: Tensor
) -> SimOTAAssignment:
    """Pick each GT's dynamic-k cheapest anchors; resolve shared anchors by minimum cost.

    cost and ious are (G, A_near) over the anchors selected by `near` (A,).
    """
    matching = torch.zeros_like(cost, dtype=torch.uint8)
    top_ious = torch.topk(ious, min(TOPK_IOUS, ious.shape[1]), dim=1).values
    dynamic_ks = torch.clamp(top_ious.sum(1).int(), min=1)
    for g in range(cost.shape[0]):
        # int(): one host sync per GT, as 1.6.0's topk(k=<tensor>) makes.
        idx = torch.topk(cost[g], k=int(dynamic_ks[g]), largest=False).indices
        matching[g][idx] = 1
    per_anchor = matching.sum(0)
    if per_anchor.max() > 1:  # host sync, as in 1.6.0
        shared = per_anchor > 1
        cheapest = cost[:, shared].argmin(dim=0)
        matching[:, shared] = 0
        matching[cheapest, shared] = 1
    positive = per_anchor > 0
    num_fg = int(positive.sum().item())
    fg_mask = near.clone()
    fg_mask[near] = positive
    matched_gt = matching[:, positive].argmax(0)
    matched_ious = (matching * ious).sum(0)[positive]
    return SimOTAAssignment(fg_mask, matched_gt, gt_classes[matched_gt], matched_ious, num_fg)


@torch.no_grad()
def simota_assign(
    gt_boxes: Tensor,
    gt_classes: Tensor,
    pred_boxes: Tensor,
    cls_logits: Tensor,
    obj_logits: Tensor,
    grid: Tensor,
    strides: Tensor,
) -> SimOTAAssignment:
    """Assign one image's anchors to its GTs (G ≥ 1 real rows).

    gt_boxes (G, 4) cxcywh input pixels, gt_classes (G,); pred_boxes (A, 4) decoded cxcywh;
    cls_logits (A, nc), obj_logits (A, 1) raw; grid (A, 2) cell x, y; strides (A,).
    """
    near, in_prior = geometry_prior(gt_boxes.float(), grid.float(), strides.float())
    boxes = pred_boxes[near].float()
    if boxes.shape[0] == 0:  # no anchor centre near any GT (a degenerate box): no positives
        empty = torch.zeros(0, dtype=torch.long, device=near.device)
        return SimOTAAssignment(near, empty, gt_classes[empty], empty.float(), 0)
    ious = pairwise_iou(gt_boxes.float(), boxes)
    cost = assignment_cost(gt_classes, cls_logits[near], obj_logits[near], ious, in_prior)
    return dynamic_k_matching(cost, ious, gt_classes, near)
