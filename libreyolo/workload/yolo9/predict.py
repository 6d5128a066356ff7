"""The YOLOv9 predict path around the network: find images, letterbox them, decode detections.

Two separable stages around the forward, so the profiler can time each one: `preprocess`
(letterbox + normalise + move to the device) and `postprocess` (confidence filter, class-aware
NMS, undo the letterbox). Finding and decoding files is `workload.images` (re-exported here).
Semantics follow libreyolo 1.6.0: letterbox with pad 114 (top-left unless the checkpoint says
centre), every (anchor, class) pair over `conf` a candidate, class-aware NMS, at most `max_det`
boxes an image. This module must not build or run the model, time anything, print, or exit: errors
are raised as `UsageError` subclasses and the CLI decides what to do with them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F
from PIL import Image
from torchvision.ops import batched_nms

from libreyolo.errors import UsageError
from libreyolo.workload.images import SAMPLE_IMAGE, decode_image, load_images
from libreyolo.workload.letterbox import PAD_VALUE, Letterbox, PadMode

__all__ = [
    "SAMPLE_IMAGE",
    "STRIDE",
    "Detections",
    "decode_image",
    "input_size",
    "load_images",
    "postprocess",
    "preprocess",
]

STRIDE = 32  # the largest head stride; input sides must be multiples of it
MAX_CANDIDATES = 30_000  # top-k cap on (anchor, class) candidates before NMS, as in 1.6.0


def input_size(imgsz: int) -> int:
    """Round a requested input side up to a multiple of the stride (1.6.0 does the same)."""
    if imgsz <= 0:
        raise UsageError(f"imgsz must be positive; got {imgsz}")
    return math.ceil(imgsz / STRIDE) * STRIDE


def preprocess(
    images: Sequence[Image.Image],
    *,
    imgsz: int,
    pad: PadMode = "topleft",
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, list[Letterbox]]:
    """Letterbox RGB images into a (B, 3, S, S) batch in [0, 1] on `device`; S = input_size(imgsz).

    Each image crosses to the device as uint8 (a quarter of float32's bytes) and is resized there
    with bilinear, align_corners=False, no antialias, rounded back to 0..255: this tracks OpenCV's
    INTER_LINEAR on uint8, which 1.6.0 uses (PIL's bilinear resize antialiases when it shrinks,
    and so gives other pixels).
    """
    if not images:
        raise UsageError("preprocess needs at least one image")
    size = input_size(imgsz)
    device = torch.device(device)
    batch = torch.full((len(images), 3, size, size), float(PAD_VALUE), device=device)
    boxes: list[Letterbox] = []
    for i, img in enumerate(images):
        if img.mode != "RGB":
            img = img.convert("RGB")
        box = Letterbox.fit(img.width, img.height, size, pad)
        # bytearray: frombuffer needs a writable buffer; avoids a numpy dependency.
        hwc = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8)
        # Copy the contiguous HWC bytes, then permute on the device (a strided copy costs more).
        chw = hwc.view(img.height, img.width, 3).to(device).permute(2, 0, 1)
        pixels = chw.unsqueeze(0).float()
        if (box.new_w, box.new_h) != (img.width, img.height):
            pixels = F.interpolate(
                pixels, size=(box.new_h, box.new_w), mode="bilinear", align_corners=False
            )
            pixels = pixels.round_().clamp_(0, 255)
        rows = slice(box.pad_y, box.pad_y + box.new_h)
        cols = slice(box.pad_x, box.pad_x + box.new_w)
        batch[i, :, rows, cols] = pixels[0]
        boxes.append(box)
    return batch.div_(255.0).to(dtype), boxes


class Detections(NamedTuple):
    """One image's detections in original pixels, sorted by descending score."""

    boxes: torch.Tensor  # (K, 4) float32 xyxy
    scores: torch.Tensor  # (K,) float32
    classes: torch.Tensor  # (K,) int64


def postprocess(
    pred: torch.Tensor,
    letterboxes: Sequence[Letterbox],
    *,
    conf: float = 0.25,
    iou: float = 0.45,
    max_det: int = 300,
    classes: Sequence[int] | None = None,
    max_candidates: int = MAX_CANDIDATES,
) -> list[Detections]:
    """Decode an eval forward's (B, 4+nc, A) output (xyxy input pixels, then sigmoid scores).

    Per image, as 1.6.0 does: every (anchor, class) pair scoring above `conf` is a candidate
    (multi-label); at most max(max_det, max_candidates) of the best survive; boxes are mapped back
    to the original image and clipped, empty or non-finite ones dropped; class-aware NMS at `iou`;
    the `max_det` best are kept.
    """
    if pred.ndim != 3 or pred.shape[1] < 5:
        raise UsageError(f"predictions must be (B, 4+nc, A); got {tuple(pred.shape)}")
    if pred.shape[0] != len(letterboxes):
        raise UsageError(f"{pred.shape[0]} predictions for {len(letterboxes)} letterboxes")
    wanted = None if classes is None else torch.as_tensor(list(classes), device=pred.device)
    cap = max(max_det, max_candidates)
    # fp32 for the box math even after an fp16/bf16 autocast forward.
    pred = pred.detach().float()
    return [
        _decode_one(pred[i], box, conf=conf, iou=iou, max_det=max_det, wanted=wanted, cap=cap)
        for i, box in enumerate(letterboxes)
    ]


def _decode_one(
    pred: torch.Tensor,
    box: Letterbox,
    *,
    conf: float,
    iou: float,
    max_det: int,
    wanted: torch.Tensor | None,
    cap: int,
) -> Detections:
    boxes_in, scores = pred[:4].T, pred[4:].T  # (A, 4), (A, nc)
    anchor, cls = (scores > conf).nonzero(as_tuple=True)
    score = scores[anchor, cls]
    if wanted is not None:
        keep = torch.isin(cls, wanted)
        anchor, cls, score = anchor[keep], cls[keep], score[keep]
    if score.numel() > cap:
        score, top = score.topk(cap)
        anchor, cls = anchor[top], cls[top]
    xyxy = box.to_original(boxes_in[anchor])
    # Zero-area boxes (wholly outside the image after clipping) and NaN/inf rows cannot survive NMS.
    valid = (
        torch.isfinite(xyxy).all(dim=1)
        & torch.isfinite(score)
        & (xyxy[:, 2] > xyxy[:, 0])
        & (xyxy[:, 3] > xyxy[:, 1])
    )
    xyxy, score, cls = xyxy[valid], score[valid], cls[valid]
    keep = batched_nms(xyxy, score, cls, iou)[:max_det]  # sorted by descending score
    return Detections(xyxy[keep], score[keep], cls[keep])
