"""The YOLOX predict path around the network: letterbox BGR images, decode the head maps, NMS.

Two separable stages, so the profiler can time each one: `preprocess` (resize + letterbox + move
to the device) and `postprocess` (decode, score filter, class-aware NMS, undo the letterbox).
Semantics follow libreyolo 1.6.0's `preprocess/yolox.py` and `postprocess/yolox.py`: the input
is BGR in 0..255 (no division), the image is resized with PIL's bilinear filter to floor(side ×
ratio) and pasted at the top-left of a grey (114) square, and a box scores objectness × its best
class (one label per anchor). Image loading is shared with YOLOv9
(`yolo9.predict.load_images`/`decode_image`).

Must not: build or run the model, time anything, print, or exit (errors are `UsageError`s).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from PIL import Image
from torch import Tensor
from torchvision.ops import batched_nms

from libreyolo.errors import UsageError
from libreyolo.workload.letterbox import PAD_VALUE, Letterbox
from libreyolo.workload.yolo9.predict import Detections

STRIDES: tuple[int, ...] = (8, 16, 32)
STRIDE = STRIDES[-1]  # the network only runs on inputs whose side is a multiple of this


def input_size(imgsz: int) -> int:
    """Check a requested input side: positive and a multiple of 32.

    1.6.0 does not round YOLOX sizes (it sets no `IMGSZ_STRIDE` for the family) and an unaligned
    side fails inside the PAFPN; we refuse it up front instead of rounding to another size.
    """
    if imgsz <= 0:
        raise UsageError(f"imgsz must be positive; got {imgsz}")
    if imgsz % STRIDE:
        below, above = imgsz // STRIDE * STRIDE, (imgsz // STRIDE + 1) * STRIDE
        raise UsageError(
            f"YOLOX imgsz must be a multiple of {STRIDE}; got {imgsz}",
            hint=f"try {below or above} or {above}",
        )
    return imgsz


def letterbox(orig_w: int, orig_h: int, imgsz: int) -> Letterbox:
    """1.6.0's YOLOX placement: ratio = min(S/w, S/h), sides floored (not rounded), top-left."""
    if orig_w <= 0 or orig_h <= 0:
        raise UsageError(f"image has no pixels: {orig_w}x{orig_h}")
    ratio = min(imgsz / orig_w, imgsz / orig_h)
    # max(1, ·): 1.6.0 crashes on a zero side (extreme aspect ratios); one pixel is the nearest.
    new_w, new_h = max(1, int(orig_w * ratio)), max(1, int(orig_h * ratio))
    return Letterbox(orig_w, orig_h, imgsz, ratio, new_w, new_h, 0, 0)


def preprocess(
    images: Sequence[Image.Image],
    *,
    imgsz: int,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> tuple[Tensor, list[Letterbox]]:
    """Letterbox RGB images into a (B, 3, S, S) BGR batch in 0..255 on `device`.

    The resize runs on the host with PIL's BILINEAR filter (antialiased when shrinking), as 1.6.0
    does; each resized image then crosses to the device as uint8 and lands at the top-left of a
    grey (114) canvas, channels reversed to BGR.
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
        box = letterbox(img.width, img.height, size)
        # 1.6.0 resizes even at the same size; PIL returns a copy then, so skipping it is exact.
        if (box.new_w, box.new_h) != img.size:
            img = img.resize((box.new_w, box.new_h), Image.Resampling.BILINEAR)
        # bytearray: frombuffer needs a writable buffer; avoids a numpy dependency.
        hwc = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8)
        chw = hwc.view(box.new_h, box.new_w, 3).to(device).permute(2, 0, 1)
        batch[i, :, : box.new_h, : box.new_w] = chw.flip(0)  # RGB -> BGR
        boxes.append(box)
    return batch.to(dtype), boxes


def decode(outputs: Sequence[Tensor], strides: Sequence[int] = STRIDES) -> Tensor:
    """Flatten per-stride (B, 5+nc, H, W) maps into (B, A, 5+nc) with boxes in input pixels.

    Anchors run stride by stride, row-major within a map. Columns 0..3 become cx, cy, w, h:
    xy = (offset + grid) · stride with a 0-based grid (no half-cell offset, as YOLOX trains),
    wh = exp(raw) · stride; the score columns pass through. Always float32, so fp16/bf16 maps
    neither overflow in exp nor lose pixel precision.
    """
    if len(outputs) != len(strides):
        raise UsageError(f"{len(outputs)} head maps for {len(strides)} strides")
    levels = []
    for out, stride in zip(outputs, strides, strict=True):
        b, c, h, w = out.shape
        flat = out.detach().float().reshape(b, c, h * w).transpose(1, 2)  # (B, HW, C)
        ys, xs = torch.meshgrid(
            torch.arange(h, device=out.device, dtype=torch.float32),
            torch.arange(w, device=out.device, dtype=torch.float32),
            indexing="ij",
        )
        grid = torch.stack((xs, ys), dim=-1).reshape(1, h * w, 2)
        xy = (flat[..., :2] + grid) * stride
        wh = flat[..., 2:4].exp() * stride
        levels.append(torch.cat((xy, wh, flat[..., 4:]), dim=-1))
    return torch.cat(levels, dim=1)


def postprocess(
    outputs: Sequence[Tensor],
    letterboxes: Sequence[Letterbox],
    *,
    conf: float = 0.25,
    iou: float = 0.45,
    max_det: int = 300,
    strides: Sequence[int] = STRIDES,
) -> list[Detections]:
    """Detections per image from an eval forward's maps (sigmoid objectness and class scores).

    Per image, as 1.6.0: score = objectness × best class probability; anchors scoring above
    `conf` survive; boxes go to xyxy, back to original pixels and are clipped; empty boxes are
    dropped; class-aware NMS at `iou`; the `max_det` best are kept, by descending score.
    """
    pred = decode(outputs, strides)
    if pred.shape[0] != len(letterboxes):
        raise UsageError(f"{pred.shape[0]} predictions for {len(letterboxes)} letterboxes")
    return [
        _detect_one(pred[i], box, conf=conf, iou=iou, max_det=max_det)
        for i, box in enumerate(letterboxes)
    ]


def _detect_one(
    pred: Tensor, box: Letterbox, *, conf: float, iou: float, max_det: int
) -> Detections:
    score, cls = (pred[:, 4:5] * pred[:, 5:]).max(dim=1)
    keep = score > conf
    cxcywh, score, cls = pred[keep, :4], score[keep], cls[keep]
    half = cxcywh[:, 2:] / 2
    xyxy = box.to_original(torch.cat((cxcywh[:, :2] - half, cxcywh[:, :2] + half), dim=1))
    # Clipping may leave zero-area boxes (wholly outside the image); NaN fails these tests too.
    valid = (xyxy[:, 2] > xyxy[:, 0]) & (xyxy[:, 3] > xyxy[:, 1]) & torch.isfinite(score)
    xyxy, score, cls = xyxy[valid], score[valid], cls[valid]
    keep = batched_nms(xyxy, score, cls, iou)[:max_det]  # sorted by descending score
    return Detections(xyxy[keep], score[keep], cls[keep])
