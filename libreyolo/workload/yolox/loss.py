"""YOLOX training loss: decode the raw head maps, SimOTA per image, IoU + obj + cls (+ L1) terms.

Role: turn one train-mode forward (three (B, 5+nc, H, W) maps of raw logits) and the batch's
targets ((B, T, 5) rows [class, cx, cy, w, h] in input pixels, all-zero rows are padding, real
rows first) into one scalar loss plus detached parts, with the values libreyolo 1.6.0 computes
(`models/yolox/nn.py`, `YOLOXHead.get_losses`; `models/yolox/loss.py`, `IoULoss`):

    total = (5 · Σ(1 − IoU²) + Σ BCE(obj, fg) + Σ BCE(cls, one-hot · IoU) [+ Σ |raw − l1 target|])
            / max(num_fg, 1)

over positives (obj over every anchor). Parts are reported as 1.6.0 logs them: `iou` is already
× 5, so total = iou + obj + cls + l1; `num_fg` is the batch's positive count.

Deliberately kept from 1.6.0, because the profile must show them: a Python loop over images with
a host sync per image (its real-row count) and SimOTA's own syncs, and `torch.cuda.empty_cache()`
after each image's assignment. Boxes are decoded in the maps' dtype, as 1.6.0 writes them back
into its fp16 output under AMP. Not kept: 1.6.0's retry of an assignment on the CPU after a CUDA
out-of-memory error. Must not: step an optimiser, move tensors between devices, or print.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from libreyolo.workload.distributed import global_count, world_size
from libreyolo.workload.yolox.simota import SimOTAAssignment, simota_assign

IOU_WEIGHT = 5.0  # 1.6.0's reg_weight
IOU_LOSS_EPS = 1e-16
L1_LOG_EPS = 1e-8


def iou_loss(pred: Tensor, target: Tensor) -> Tensor:
    """Per-box 1 − IoU² of matching cxcywh rows (N, 4), 1.6.0's `IoULoss(loss_type="iou")`."""
    p_tl, p_br = pred[:, :2] - pred[:, 2:] / 2, pred[:, :2] + pred[:, 2:] / 2
    t_tl, t_br = target[:, :2] - target[:, 2:] / 2, target[:, :2] + target[:, 2:] / 2
    tl, br = torch.max(p_tl, t_tl), torch.min(p_br, t_br)
    overlaps = (tl < br).to(tl.dtype).prod(dim=1)
    inter = (br - tl).prod(dim=1) * overlaps
    union = pred[:, 2:].prod(dim=1) + target[:, 2:].prod(dim=1) - inter
    iou = inter / (union + IOU_LOSS_EPS)
    return 1 - iou**2


def flatten_outputs(
    outputs: Sequence[Tensor], strides: Sequence[int]
) -> tuple[Tensor, Tensor, Tensor]:
    """Raw maps → (raw (B, A, 5+nc), grid (A, 2) cell x, y, strides (A,)), in the maps' dtype."""
    raws, grids, stride_rows = [], [], []
    for out, stride in zip(outputs, strides, strict=True):
        b, c, h, w = out.shape
        raws.append(out.permute(0, 2, 3, 1).reshape(b, h * w, c))
        ys, xs = torch.meshgrid(
            torch.arange(h, device=out.device), torch.arange(w, device=out.device), indexing="ij"
        )
        grids.append(torch.stack((xs, ys), dim=-1).reshape(h * w, 2).to(out.dtype))
        stride_rows.append(torch.full((h * w,), float(stride), dtype=out.dtype, device=out.device))
    return torch.cat(raws, 1), torch.cat(grids, 0), torch.cat(stride_rows, 0)


def decode_boxes(raw: Tensor, grid: Tensor, strides: Tensor) -> Tensor:
    """(…, A, 4) raw regressions → cxcywh input pixels, in raw's dtype (autograd kept)."""
    xy = (raw[..., :2] + grid) * strides[:, None]
    wh = torch.exp(raw[..., 2:4]) * strides[:, None]
    return torch.cat((xy, wh), dim=-1).to(raw.dtype)


def l1_target(gt: Tensor, grid: Tensor, strides: Tensor) -> Tensor:
    """What the raw regressions of positives should be: cell offsets and log sizes in strides."""
    s = strides[:, None]
    return torch.cat((gt[:, :2] / s - grid, torch.log(gt[:, 2:4] / s + L1_LOG_EPS)), dim=1)


class YOLOXLoss:
    """SimOTA-assigned YOLOX loss over per-stride raw maps; `use_l1` once mosaic is off."""

    def __init__(self, nc: int, strides: Sequence[int] = (8, 16, 32), use_l1: bool = False):
        self.nc = nc
        self.strides = tuple(strides)
        self.use_l1 = use_l1

    def __call__(
        self, outputs: Sequence[Tensor], targets: Tensor
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """(total, parts) for raw train-mode maps and (B, T, 5) padded targets."""
        raw, grid, strides = flatten_outputs(outputs, self.strides)
        if targets.ndim != 3 or targets.shape[0] != raw.shape[0] or targets.shape[2] != 5:
            raise ValueError(f"targets must be ({raw.shape[0]}, T, 5); got {tuple(targets.shape)}")
        boxes = decode_boxes(raw, grid, strides)
        obj, cls = raw[..., 4:5], raw[..., 5:]
        real_rows = (targets.sum(dim=2) > 0).sum(dim=1)

        fg_masks, cls_targets, box_targets, l1_targets = [], [], [], []
        num_fg = 0
        for i in range(raw.shape[0]):
            num_gt = int(real_rows[i])  # host sync per image, as 1.6.0
            if num_gt == 0:
                fg_masks.append(torch.zeros(raw.shape[1], dtype=torch.bool, device=raw.device))
                continue
            gt = targets[i, :num_gt]
            a = simota_assign(gt[:, 1:5], gt[:, 0], boxes[i], cls[i], obj[i], grid, strides)
            if raw.is_cuda:
                torch.cuda.empty_cache()  # 1.6.0 does this after every image's assignment
            num_fg += a.num_fg
            fg_masks.append(a.fg_mask)
            cls_targets.append(self._cls_target(a))
            matched = gt[a.matched_gt, 1:5]
            box_targets.append(matched)
            if self.use_l1:
                fg = a.fg_mask
                l1_targets.append(l1_target(matched, grid[fg], strides[fg]).to(raw.dtype))

        fg_mask = torch.cat(fg_masks)
        norm = float(max(num_fg, 1))
        if world_size() > 1:  # 1.6.0: the global count's mean, read back (`all_reduce_avg_scalar`)
            norm = float(global_count(torch.tensor(float(num_fg), device=raw.device)))
        flat_boxes = boxes.reshape(-1, 4)[fg_mask].float()
        box_target = _cat_rows(box_targets, 4, flat_boxes)
        loss_iou = iou_loss(flat_boxes, box_target).sum() / norm
        obj_target = fg_mask.unsqueeze(-1).float()
        loss_obj = (
            F.binary_cross_entropy_with_logits(
                obj.reshape(-1, 1).float(), obj_target, reduction="none"
            ).sum()
            / norm
        )
        flat_cls = cls.reshape(-1, self.nc)[fg_mask].float()
        loss_cls = (
            F.binary_cross_entropy_with_logits(
                flat_cls, _cat_rows(cls_targets, self.nc, flat_cls), reduction="none"
            ).sum()
            / norm
        )
        if self.use_l1:
            flat_raw = raw[..., :4].reshape(-1, 4)[fg_mask].float()
            l1_all = _cat_rows(l1_targets, 4, flat_raw).float()
            loss_l1 = F.l1_loss(flat_raw, l1_all, reduction="none").sum() / norm
        else:
            loss_l1 = raw.new_zeros((), dtype=torch.float32)

        iou_part = IOU_WEIGHT * loss_iou
        total = iou_part + loss_obj + loss_cls + loss_l1
        parts = {
            "iou": iou_part.detach(),
            "obj": loss_obj.detach(),
            "cls": loss_cls.detach(),
            "l1": loss_l1.detach(),
            "num_fg": torch.tensor(float(num_fg), device=raw.device),
        }
        return total, parts

    def _cls_target(self, a: SimOTAAssignment) -> Tensor:
        # Soft targets: the positive's IoU with its GT on the GT's class, 0 elsewhere.
        return F.one_hot(a.matched_classes.long(), self.nc) * a.matched_ious.unsqueeze(-1)


def _cat_rows(rows: list[Tensor], width: int, like: Tensor) -> Tensor:
    """Concatenate per-image target rows; an all-background batch gives (0, width)."""
    if not rows:
        return like.new_zeros((0, width))
    return torch.cat(rows, 0).to(like.dtype)
