"""Agreement before speed: a run that is not eager fp32 (`--exec compile|cudagraphs|onnxruntime`,
`--half`) is checked, after its window, against eager fp32 on the same images, so nothing calls
it faster while it detects something else (an export that is fast and useless).

Role: `agreement_of` runs each of the first images (up to `MAX_IMAGES`) through both predict
paths and matches the detections greedily by score: an eager box is found when the mode has an
unmatched box of its class at IoU >= `MATCH_IOU`. Recall is eager's boxes found, precision the
mode's boxes eager has; the largest absolute difference of the raw outputs is kept beside them.
With nothing detected by eager (random weights score below the threshold) there is nothing to
agree on, and the record says so instead of passing. Must not: run inside the window.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from libreyolo.document.model import Agreement
from libreyolo.workload.family import DetectionsLike, InferRunner

MATCH_IOU = 0.5
TIE_IOU = 0.45  # the predict path's default NMS IoU: overlaps it would suppress
SCORE_TIE = 1e-4  # scores this close are equal: fp32 kernels of two runtimes differ by less
MAX_IMAGES = 8  # enough to see a broken export, few enough to cost a second


class EagerOf(nn.Module):
    """`model` run eagerly even when `torch.compile` compiled it in place (`Module.compile`
    swaps the module's own call): the reference every other mode is held to."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.inner = model

    def forward(self, x: torch.Tensor) -> object:
        with torch.compiler.set_stance("force_eager"):
            return self.inner(x)


def agreement_of(
    reference: InferRunner, mode: InferRunner, *, num_images: int, batch: int, random_init: bool
) -> Agreement:
    """`mode` against `reference` (eager fp32) over the first images of the source."""
    images = min(num_images, MAX_IMAGES)
    calls = max(1, math.ceil(images / batch))
    ref_total = mode_total = found = ties = 0
    diff: float | None = 0.0
    scale = 0.0  # the largest |eager output|: what the difference is relative to
    for call in range(calls):
        ref_raw, ref_found = reference.detect(call)
        raw, mode_found = mode.detect(call)
        ref_tensors = _tensors(ref_raw)
        scale = max([scale, *(float(t.float().abs().max()) for t in ref_tensors if t.numel())])
        diff = None if diff is None else _max_abs_diff(ref_tensors, _tensors(raw), diff)
        for ours, theirs in zip(ref_found, mode_found, strict=True):
            matched, ref_ties, mode_ties = _matches(ours, theirs)
            ref_total += len(ours.boxes) - ref_ties
            mode_total += len(theirs.boxes) - mode_ties
            ties += ref_ties + mode_ties
            found += matched
    note = None
    if ref_total == 0 and mode_total == 0:
        note = (
            "random weights: eager detects nothing, so there is nothing to agree on"
            if random_init
            else "eager detected nothing on these images: nothing to agree on"
        )
    return Agreement(
        num_images=calls * batch,
        reference_boxes=ref_total,
        boxes=mode_total,
        recall=round(found / ref_total, 4) if ref_total else None,
        precision=round(found / mode_total, 4) if mode_total else None,
        ties=ties,
        max_abs_diff=None if diff is None else float(f"{diff:.3g}"),
        max_rel_diff=None if diff is None or scale <= 0 else float(f"{diff / scale:.3g}"),
        note=note,
    )


def _matches(reference: DetectionsLike, mode: DetectionsLike) -> tuple[int, int, int]:
    """(eager's boxes the mode found: same class, IoU >= MATCH_IOU, each mode box used once,
    eager's boxes taken in score order; eager's unmatched boxes that are ties; the mode's).
    A tie is an unmatched box with a box of its class on the other side that overlaps it as
    NMS would suppress (IoU >= TIE_IOU) and scores within SCORE_TIE of it, or one that scores
    within SCORE_TIE of the other side's lowest kept score: which survives NMS, the threshold
    or the max_det cut is then the order of equal scores, not a disagreement."""
    ref_boxes, mode_boxes = reference.boxes.float().cpu(), mode.boxes.float().cpu()
    if len(ref_boxes) == 0 or len(mode_boxes) == 0:
        return 0, 0, 0
    ref_scores, mode_scores = reference.scores.float().cpu(), mode.scores.float().cpu()
    iou = _iou(ref_boxes, mode_boxes)
    same = reference.classes.cpu().view(-1, 1) == mode.classes.cpu().view(1, -1)
    iou = torch.where(same, iou, torch.zeros_like(iou))
    free = torch.ones(len(mode_boxes), dtype=torch.bool)
    found = torch.zeros(len(ref_boxes), dtype=torch.bool)
    for row in torch.argsort(ref_scores, descending=True).tolist():
        candidates = torch.where(free, iou[row], torch.full_like(iou[row], -1.0))
        best = int(torch.argmax(candidates))
        if candidates[best] >= MATCH_IOU:
            free[best] = False
            found[row] = True
    close = (ref_scores.view(-1, 1) - mode_scores.view(1, -1)).abs() <= SCORE_TIE
    tied = (iou >= TIE_IOU) & close
    # at the other side's cut (its lowest kept score: the threshold or max_det), either way
    ref_cut = (ref_scores - mode_scores.min()).abs() <= SCORE_TIE
    mode_cut = (mode_scores - ref_scores.min()).abs() <= SCORE_TIE
    ref_ties = int((~found & (tied.any(dim=1) | ref_cut)).sum())
    mode_ties = int((free & (tied.any(dim=0) | mode_cut)).sum())
    return int(found.sum()), ref_ties, mode_ties


def _iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Pairwise IoU of xyxy boxes `a` (N, 4) and `b` (M, 4)."""
    top_left = torch.maximum(a[:, None, :2], b[None, :, :2])
    bottom_right = torch.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = (bottom_right - top_left).clamp(min=0).prod(dim=2)
    area_a = (a[:, 2:] - a[:, :2]).clamp(min=0).prod(dim=1)
    area_b = (b[:, 2:] - b[:, :2]).clamp(min=0).prod(dim=1)
    union = area_a[:, None] + area_b[None, :] - inter
    return torch.where(union > 0, inter / union, torch.zeros_like(union))


def _tensors(outputs: object) -> list[torch.Tensor]:
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    if isinstance(outputs, dict):
        return [t for value in outputs.values() for t in _tensors(value)]
    if isinstance(outputs, list | tuple):
        return [t for value in outputs for t in _tensors(value)]
    return []


def _max_abs_diff(
    ours: list[torch.Tensor], theirs: list[torch.Tensor], so_far: float
) -> float | None:
    """The largest absolute difference between the raw outputs' tensors, or None when they do
    not line up (another structure or shape)."""
    if not ours or len(ours) != len(theirs):
        return None
    for a, b in zip(ours, theirs, strict=True):
        if a.shape != b.shape:
            return None
        so_far = max(so_far, float((a.float().cpu() - b.float().cpu()).abs().max()))
    return so_far
