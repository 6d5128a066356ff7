"""YOLOv9 training loss: CIoU, target padding, the task-aligned assigner and the weighted terms.

Role: turn the raw head maps of one train-mode forward (main head and, with PGI, the aux head)
and the batch's real target rows into one scalar loss plus detached parts, with the values
libreyolo 1.6.0 (the MultimediaTechLab port) computes: task-aligned assignment, then BCE over
all anchors and classes, CIoU and DFL on the assigned ones, weighted box 7.5, DFL 1.5, cls 0.5
(and, with PGI, the aux head's loss at 0.25). Anchor centres come from
`yolo9.model.make_anchors`, the one definition the predict path also uses.

Targets come padded per image to 1.6.0's `max_labels` (300) rows, as its transforms make them
(`fit_rows`), or, as the `trimmed_targets` variant, only to the batch's largest real count: the
same values at a fraction of the assigner's cost.

By default the arithmetic has 1.6.0's shape too, so a step costs what the user's trainer pays:
each head builds its own candidate mask from the four side distances stacked and divided by the
stride; an anchor claimed twice is settled by `argmax` over the targets; the class targets are a
one-hot scaled in full; the box and DFL terms run on the positives gathered by boolean mask
(a host sync on CUDA, as 1.6.0's). The `vectorised_assigner` variant keeps the values but not
that cost: one candidate mask shared by both heads, reductions over targets by `amax`/`amin`
(argmax over a middle dim is far slower on the CPU), the class targets scattered directly, and
the box and DFL terms dense over all anchors with zero weight off the positives: no host sync.

Must not: step an optimiser or move tensors between devices. The vectorised path must not sync
with the host either; its one sync is grouping raw (N, 6) rows into a padded tensor, whose width
is a host integer: `pad_targets` does it on the CPU rows before the copy when the caller lets it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

from libreyolo.workload.distributed import global_count, world_size
from libreyolo.workload.yolo9.model import TrainOutput, make_anchors

EPS = 1e-7  # the reference's IoU epsilon
NORM_EPS = 1e-9  # guards the per-GT normalisation of alignment scores
DFL_MARGIN = 1.01  # distances stop at reg_max - 1.01 cells, so the right-hand bin always exists


def ciou(box1: Tensor, box2: Tensor) -> Tensor:
    """Complete IoU of xyxy boxes, broadcast over leading dims, in fp32 (≈ 1 for equal boxes)."""
    ax1, ay1, ax2, ay2 = box1.float().unbind(-1)
    bx1, by1, bx2, by2 = box2.float().unbind(-1)
    inter = (torch.minimum(ax2, bx2) - torch.maximum(ax1, bx1)).clamp(min=0) * (
        torch.minimum(ay2, by2) - torch.maximum(ay1, by1)
    ).clamp(min=0)
    aw, ah, bw, bh = ax2 - ax1, ay2 - ay1, bx2 - bx1, by2 - by1
    iou = inter / (aw * ah + bw * bh - inter + EPS)
    diag = (torch.maximum(ax2, bx2) - torch.minimum(ax1, bx1)).pow(2) + (
        torch.maximum(ay2, by2) - torch.minimum(ay1, by1)
    ).pow(2)
    centre = ((ax1 + ax2 - bx1 - bx2).pow(2) + (ay1 + ay2 - by1 - by2).pow(2)) / 4
    # Aspect terms first: with pairwise broadcasting the atan runs on (B, T, 1) and (B, 1, A) only.
    v = (4 / math.pi**2) * (torch.atan(aw / (ah + EPS)) - torch.atan(bw / (bh + EPS))).pow(2)
    with torch.no_grad():  # the reference treats the trade-off weight as a constant
        alpha = v / (v - iou + 1 + EPS)
    return iou - centre / (diag + EPS) - alpha * v


def pad_targets(rows: Tensor, batch_size: int) -> Tensor:
    """Group (N, 6) rows (image, class, x1, y1, x2, y2) into (B, T, 5) [class, x1, y1, x2, y2].

    T is the largest real count per image in this batch (0 when the batch has no boxes). Padding
    rows have class -1 and a zero box; the assigner ignores them. T is a host integer, so on a CUDA
    tensor this syncs: call it on the CPU rows before the copy.
    """
    if rows.ndim != 2 or rows.shape[1] != 6:
        raise ValueError(f"targets must be (N, 6) rows, got shape {tuple(rows.shape)}")
    dtype = rows.dtype if rows.is_floating_point() else torch.float32
    if rows.shape[0] == 0:
        return torch.zeros((batch_size, 0, 5), dtype=dtype, device=rows.device)
    image = rows[:, 0].long()
    counts = torch.bincount(image, minlength=batch_size)
    if counts.numel() > batch_size or bool((image < 0).any()):
        raise ValueError(f"target image indices must lie in [0, {batch_size})")
    order = torch.argsort(image, stable=True)
    image = image[order]
    slot = torch.arange(image.numel(), device=rows.device) - (counts.cumsum(0) - counts)[image]
    out = torch.zeros((batch_size, int(counts.max()), 5), dtype=dtype, device=rows.device)
    out[..., 0] = -1
    out[image, slot] = rows[order, 1:].to(dtype)
    return out


def fit_rows(targets: Tensor, rows: int | None) -> Tensor:
    """(B, T, 5) padded targets cut or padded to exactly `rows` rows per image, as 1.6.0's
    transforms pad every image to `max_labels` (boxes past it dropped); None: unchanged.

    Shapes only, no host sync: on the device after the copy, so the collate's tensor stays the
    trimmed, pinned one and its copy stays asynchronous.
    """
    if rows is None or targets.shape[1] == rows:
        return targets
    if targets.shape[1] > rows:
        return targets[:, :rows]
    filler = targets.new_zeros((targets.shape[0], rows - targets.shape[1], targets.shape[2]))
    filler[..., 0] = -1
    return torch.cat((targets, filler), dim=1)


def candidate_mask(gt: Tensor, points: Tensor, stride: Tensor, reg_max: int) -> Tensor:
    """(B, T, A) bool: anchor centre inside the GT box and every side within reg_max - 1.01 cells.

    `gt` is (B, T, 5) padded targets in pixels, `points` (A, 2) anchor centres in grid units and
    `stride` (A, 1); padding rows (class < 0) match nothing.
    """
    x1, y1, x2, y2 = (c[..., None] for c in gt[..., 1:].unbind(-1))  # each (B, T, 1)
    px, py = (points * stride).unbind(-1)  # anchor centres in pixels, (A,)
    sides = (px - x1, py - y1, x2 - px, y2 - py)
    near = torch.minimum(torch.minimum(sides[0], sides[1]), torch.minimum(sides[2], sides[3]))
    far = torch.maximum(torch.maximum(sides[0], sides[1]), torch.maximum(sides[2], sides[3]))
    inside = (near >= 0) & (far / stride[:, 0] <= reg_max - DFL_MARGIN)
    return inside & (gt[..., :1] >= 0)


def candidate_mask_by_sides(gt: Tensor, points: Tensor, stride: Tensor, reg_max: int) -> Tensor:
    """`candidate_mask`'s values with 1.6.0's work: the four side distances of every (target,
    anchor) pair in one (B, T, A, 4) tensor, divided by the stride, reduced by `amin`/`amax`.
    Padding rows (class < 0) match nothing."""
    centres = points * stride  # (A, 2) pixels
    top_left, bottom_right = gt[:, :, None, 1:3], gt[:, :, None, 3:5]  # (B, T, 1, 2)
    sides = torch.cat((centres - top_left, bottom_right - centres), -1) / stride  # (B, T, A, 4)
    inside = (sides.amin(-1) >= 0) & (sides.amax(-1) <= reg_max - DFL_MARGIN)
    return inside & (gt[..., :1] >= 0)


class TaskAlignedAssignment(NamedTuple):
    """Per-anchor targets of one head: soft class scores, GT boxes, positive-anchor weights."""

    cls: Tensor  # (B, A, nc) one-hot of the assigned class x normalised alignment; 0 elsewhere
    boxes: Tensor  # (B, A, 4) the assigned GT box in pixels (row 0 of the image where unassigned)
    weight: Tensor  # (B, A) soft target mass of each positive anchor (box_norm); 0 elsewhere
    positive: Tensor  # (B, A) bool


def assign(
    cls_logits: Tensor,
    boxes: Tensor,
    gt: Tensor,
    candidates: Tensor,
    *,
    topk: int = 10,
    alpha: float = 0.5,
    beta: float = 6.0,
    vectorised: bool = True,
) -> TaskAlignedAssignment:
    """Task-aligned assignment on detached predictions: score = IoU**beta * prob**alpha, the top
    `topk` candidates per target, a target left without one gets its best anchor, and an anchor
    claimed twice keeps the target it overlaps most.

    `cls_logits` (B, A, nc), `boxes` (B, A, 4) predicted xyxy in pixels, `gt` (B, T, 5) padded
    targets in pixels, `candidates` from `candidate_mask`. `vectorised=False`: the same values
    by 1.6.0's operations (sigmoid of every logit, argmax over targets, a full one-hot).
    """
    b, a, _ = cls_logits.shape
    t = gt.shape[1]
    if t == 0:
        zeros = cls_logits.new_zeros((b, a))
        return TaskAlignedAssignment(
            torch.zeros_like(cls_logits), boxes.new_zeros((b, a, 4)), zeros, zeros > 0
        )
    real = gt[..., :1] >= 0  # (B, T, 1)
    gt_cls = gt[..., 0].long().clamp(min=0)
    gt_box = gt[..., 1:]
    iou = ciou(gt_box[:, :, None], boxes[:, None]).clamp(0, 1)  # (B, T, A)
    # the predicted probability of each GT's class, (B, T, A)
    if vectorised:
        prob = cls_logits.transpose(1, 2).gather(1, gt_cls[..., None].expand(b, t, a)).sigmoid()
    else:
        prob = cls_logits.sigmoid().transpose(1, 2).gather(1, gt_cls[..., None].expand(b, t, a))
    align = iou.pow(beta) * prob.pow(alpha) * real
    # Top-k among candidates; entries whose score is 0 (fewer than k candidates) are not kept.
    values, index = (align * candidates).topk(min(topk, a), dim=-1)
    chosen = torch.zeros_like(candidates).scatter_(-1, index, values > 0)
    # A GT left without anchors but with a positive score anywhere takes its best anchor.
    best_value, best_index = align.max(-1, keepdim=True)
    orphan = (chosen.sum(-1, keepdim=True) == 0) & (best_value > 0)
    best = torch.zeros_like(chosen).scatter_(-1, best_index, True)
    chosen = torch.where(orphan, best, chosen)
    # An anchor claimed by several GTs keeps the one it overlaps most (the first on ties, like
    # argmax). Vectorised, the reductions over T use sum/amax/amin: argmax/any over dim 1 (1.6.0's)
    # are ~100x slower on CPU.
    rank = torch.arange(t, device=gt.device)[None, :, None]  # (1, T, 1)
    claimed = iou * chosen
    twice = chosen.sum(1, keepdim=True) > 1
    if vectorised:
        best_gt = torch.where(claimed == claimed.amax(1, keepdim=True), rank, t)
        chosen = torch.where(twice, rank == best_gt.amin(1, keepdim=True), chosen)
        positive = chosen.sum(1) > 0
        gt_index = (chosen * rank).sum(1)  # (B, A): the one GT per positive anchor (0 elsewhere)
    else:
        best = torch.zeros_like(chosen).scatter_(1, claimed.argmax(1, keepdim=True), True)
        chosen = torch.where(twice, best, chosen)
        positive = chosen.any(1)
        gt_index = chosen.to(torch.uint8).argmax(1)
    # Soft targets: alignment / the GT's best alignment x the GT's best IoU, over chosen pairs.
    align, iou = align * chosen, iou * chosen
    scale = align / (align.amax(-1, keepdim=True) + NORM_EPS) * iou.amax(-1, keepdim=True)
    weight = scale.gather(1, gt_index[:, None]).squeeze(1) * positive
    assigned_cls = gt_cls.gather(1, gt_index)[..., None]  # (B, A, 1)
    if vectorised:
        cls = torch.zeros_like(cls_logits, dtype=weight.dtype)
        cls.scatter_(-1, assigned_cls, weight[..., None])
    else:
        one_hot = torch.zeros_like(cls_logits, dtype=torch.bool).scatter_(-1, assigned_cls, True)
        cls = one_hot * weight[..., None] * positive[..., None]
    box = gt_box.gather(1, gt_index[..., None].expand(b, a, 4))
    return TaskAlignedAssignment(cls, box, weight, positive)


def dfl_loss(log_probs: Tensor, target: Tensor) -> Tensor:
    """(B, A) DFL: cross-entropy to the two bins around each target distance, linearly weighted.

    `log_probs` (B, A, 4, reg_max) log-softmax over the bins, `target` (B, A, 4) in cells within
    [0, reg_max - 1.01]; the mean is over the four sides.
    """
    left = target.floor()
    index = left.long()[..., None]
    nll_left = -log_probs.gather(-1, index).squeeze(-1)
    nll_right = -log_probs.gather(-1, index + 1).squeeze(-1)
    return (nll_left * (left + 1 - target) + nll_right * (target - left)).mean(-1)


def dfl_cross_entropy(logits: Tensor, target: Tensor) -> Tensor:
    """`dfl_loss`'s values from raw bin logits (P, 4, reg_max) of gathered anchors, by 1.6.0's
    operations: one cross-entropy per neighbouring bin. `target` (P, 4); returns (P,)."""
    flat, distance = logits.reshape(-1, logits.shape[-1]), target.reshape(-1)
    left = distance.floor()
    nll_left = F.cross_entropy(flat, left.long(), reduction="none")
    nll_right = F.cross_entropy(flat, left.long() + 1, reduction="none")
    return (nll_left * (left + 1 - distance) + nll_right * (distance - left)).view(-1, 4).mean(-1)


class HeadLoss(NamedTuple):
    """Unweighted terms of one head, each already divided by the class-target mass."""

    box: Tensor
    dfl: Tensor
    cls: Tensor
    num_positive: Tensor  # detached count over the batch


class YOLOv9Loss:
    """Weighted box + DFL + class loss of the main head, plus `aux_weight` x the aux head's.

    Call: `loss(outputs, targets, imgsz=None) -> (total, parts)`.
    * `outputs`: `TrainOutput` (or a plain list of the three main maps), maps
      (B, 4*reg_max + nc, H/s, W/s) for the strides in order.
    * `targets`: (N, 6) rows (image, class, x1, y1, x2, y2) in input pixels, or the (B, T, 5) tensor
      from `pad_targets` (preferred on CUDA: it avoids a host sync).
    * `imgsz` (H, W): optional; when given, the map sizes are checked against it.
    * `total`: scalar with graph. `parts`: detached `box`, `dfl`, `cls` (weighted, main + aux
      combined; they sum to `total`) and `num_fg` (positive anchors per image, main head).

    `vectorised`: the `vectorised_assigner` variant's arithmetic (same values, less work, no
    host sync); by default 1.6.0's (see the module docstring).
    """

    def __init__(
        self,
        nc: int,
        strides: Sequence[int] = (8, 16, 32),
        reg_max: int = 16,
        *,
        topk: int = 10,
        alpha: float = 0.5,
        beta: float = 6.0,
        box_weight: float = 7.5,
        dfl_weight: float = 1.5,
        cls_weight: float = 0.5,
        aux_weight: float = 0.25,
        vectorised: bool = False,
    ) -> None:
        self.nc, self.strides, self.reg_max = nc, tuple(strides), reg_max
        self.vectorised = vectorised
        self.topk, self.alpha, self.beta = topk, alpha, beta
        self.weights = (box_weight, dfl_weight, cls_weight)
        self.aux_weight = aux_weight
        self._grid: dict[tuple[object, ...], tuple[Tensor, Tensor]] = {}

    def __call__(
        self,
        outputs: TrainOutput | Sequence[Tensor],
        targets: Tensor,
        imgsz: tuple[int, int] | None = None,
    ) -> tuple[Tensor, dict[str, Tensor]]:
        main, aux = (
            (outputs.main, outputs.aux) if isinstance(outputs, TrainOutput) else (outputs, None)
        )
        self._check(main, imgsz)
        gt = targets if targets.ndim == 3 else pad_targets(targets, main[0].shape[0])
        gt = gt.to(device=main[0].device, dtype=torch.float32)
        # The loss runs in fp32 even inside an fp16 autocast region (softmax/matmul/IoU precision).
        with torch.autocast(main[0].device.type, enabled=False):
            points, stride = self.grid(main)
            # one mask for both heads (vectorised); per head, as 1.6.0, otherwise
            candidates = (
                candidate_mask(gt, points, stride, self.reg_max) if self.vectorised else None
            )
            head = self.head_loss(main, gt, candidates)
            terms = [head.box, head.dfl, head.cls]
            if aux is not None:
                extra = self.head_loss(aux, gt, candidates)
                terms = [m + self.aux_weight * x for m, x in zip(terms, extra[:3], strict=True)]
            weighted = [w * term for w, term in zip(self.weights, terms, strict=True)]
        total = weighted[0] + weighted[1] + weighted[2]
        parts = {
            name: term.detach() for name, term in zip(("box", "dfl", "cls"), weighted, strict=True)
        }
        parts["num_fg"] = head.num_positive / main[0].shape[0]
        return total, parts

    def grid(self, maps: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
        """Anchor centres (A, 2) in cells and strides (A, 1), fp32; rebuilt when sizes change."""
        key = (tuple(m.shape[-2:] for m in maps), maps[0].device)
        if key not in self._grid:
            self._grid.clear()  # one input size at a time in practice
            shapes = [torch.empty(0, 0, *m.shape[-2:], device=m.device) for m in maps]
            self._grid[key] = make_anchors(shapes, self.strides)
        return self._grid[key]

    def head_loss(
        self, maps: Sequence[Tensor], gt: Tensor, candidates: Tensor | None = None
    ) -> HeadLoss:
        """Unweighted terms of one head's raw maps against padded pixel targets; `candidates`
        None: this head builds its own mask, as 1.6.0's loss does."""
        b, r = maps[0].shape[0], self.reg_max
        points, stride = self.grid(maps)
        if candidates is None:
            candidates = candidate_mask_by_sides(gt, points, stride, r)
        # (B, A, C) anchors-major: a free view of channels-last maps, one copy of NCHW ones.
        flat = torch.cat(
            [m.float().permute(0, 2, 3, 1).reshape(b, -1, m.shape[1]) for m in maps], 1
        )
        box_logits, cls_logits = torch.split(flat, [4 * r, self.nc], -1)
        bin_logits = box_logits.reshape(b, -1, 4, r)
        bins = torch.arange(r, device=flat.device, dtype=flat.dtype)
        # Vectorised: one log-softmax serves the DFL term and (exponentiated) the distances.
        log_probs = bin_logits.log_softmax(-1) if self.vectorised else None
        probs = log_probs.exp() if log_probs is not None else bin_logits.softmax(-1)
        dist = probs @ bins  # (B, A, 4) expected distance per side, in cells
        pred = torch.cat((points - dist[..., :2], points + dist[..., 2:]), -1)  # xyxy in cells
        found = assign(
            cls_logits.detach(),
            (pred * stride).detach(),
            gt,
            candidates,
            topk=self.topk,
            alpha=self.alpha,
            beta=self.beta,
            vectorised=self.vectorised,
        )
        # cls_norm; a tensor, so no host sync. On several ranks 1.6.0 divides by the global
        # count's mean (one all_reduce per loss call).
        norm = found.cls.sum().clamp(min=1) if world_size() == 1 else global_count(found.cls)
        cls = F.binary_cross_entropy_with_logits(cls_logits, found.cls, reduction="sum") / norm
        target = found.boxes / stride  # box and DFL terms work in grid cells
        sides = torch.cat((points - target[..., :2], target[..., 2:] - points), -1)
        sides = sides.clamp(0, r - DFL_MARGIN)
        if log_probs is not None:  # dense, zero weight off the positives
            box = ((1 - ciou(pred, target)) * found.weight).sum() / norm
            dfl = (dfl_loss(log_probs, sides) * found.weight).sum() / norm
        elif bool(found.positive.any()):  # the positives gathered, as 1.6.0 (a host sync)
            picked, weight = found.positive, found.weight[found.positive]
            box = ((1 - ciou(pred[picked], target[picked])) * weight).sum() / norm
            nll = dfl_cross_entropy(bin_logits[picked], sides[picked])
            dfl = (nll * weight).sum() / norm
        else:
            box, dfl = pred.sum() * 0.0, bin_logits.sum() * 0.0
        return HeadLoss(box, dfl, cls, found.positive.sum().detach())

    def _check(self, maps: Sequence[Tensor], imgsz: tuple[int, int] | None) -> None:
        if len(maps) != len(self.strides):
            raise ValueError(f"expected {len(self.strides)} maps, got {len(maps)}")
        channels = 4 * self.reg_max + self.nc
        for m, s in zip(maps, self.strides, strict=True):
            if m.ndim != 4 or m.shape[1] != channels:
                raise ValueError(f"map shape {tuple(m.shape)}: expected (B, {channels}, H, W)")
            if imgsz is not None and (m.shape[2] * s, m.shape[3] * s) != tuple(imgsz):
                raise ValueError(f"stride-{s} map {tuple(m.shape[2:])} does not match {imgsz}")
