"""The YOLOv9 predict path around the network: find images, letterbox them, decode detections.

Three separable stages, so the profiler can time each one: `load_images`/`decode_image` (file I/O),
`preprocess` (letterbox + normalise + move to the device) and `postprocess` (confidence filter,
class-aware NMS, undo the letterbox). Semantics follow libreyolo 1.6.0 (workload-notes.md §4;
reference-behaviour.md §2.2). This module must not build or run the model, time anything, print, or
exit: errors are raised as `UsageError` subclasses and the CLI decides what to do with them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import torch
import torch.nn.functional as F
from PIL import Image, UnidentifiedImageError
from torchvision.ops import batched_nms

from libreyolo.errors import MissingFileError, UsageError
from libreyolo.workload.letterbox import PAD_VALUE, Letterbox, PadMode

# Our own synthetic scene (scripts/make_sample_image.py, CC0); 1.6.0's photo is not shipped.
SAMPLE_IMAGE: Path = Path(__file__).resolve().parents[2] / "assets" / "sample.jpg"

# Directory sources yield children with these lower-cased suffixes (reference-behaviour.md §2.2).
IMAGE_SUFFIXES: frozenset[str] = frozenset(
    {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"}
)

STRIDE = 32  # the largest head stride; input sides must be multiples of it
MAX_CANDIDATES = 30_000  # top-k cap on (anchor, class) candidates before NMS, as in 1.6.0

# What PIL raises on bad files; SyntaxError comes from a few plugins on garbage headers.
_DECODE_ERRORS = (
    UnidentifiedImageError,
    Image.DecompressionBombError,
    OSError,
    ValueError,
    SyntaxError,
)


def load_images(source: str | os.PathLike[str] | None) -> list[Path]:
    """Resolve an `infer` SOURCE into image paths (no decoding).

    None → the bundled sample image; an existing file → itself, whatever its extension; a
    directory → its direct children with an image suffix, sorted by path string. Nothing found →
    an exit-2 error with the reference's message `no images found at: <source>`.
    """
    if source is None:
        if not SAMPLE_IMAGE.is_file():
            raise MissingFileError(f"bundled sample image is missing: {SAMPLE_IMAGE}")
        return [SAMPLE_IMAGE]
    path = Path(source)
    message = f"no images found at: {os.fspath(source)}"
    if path.is_dir():
        found = [p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()]
        if not found:
            raise UsageError(message, hint=f"accepted suffixes: {' '.join(sorted(IMAGE_SUFFIXES))}")
        return sorted(found, key=str)
    if path.exists():
        return [path]
    raise MissingFileError(message)


def decode_image(path: str | os.PathLike[str]) -> Image.Image:
    """Decode one file into an RGB PIL image (EXIF orientation ignored, as in 1.6.0's cv2 path)."""
    try:
        with Image.open(path) as img:
            # convert() forces the full decode inside the try, so truncated files fail here.
            return img.convert("RGB")
    except FileNotFoundError as exc:
        raise MissingFileError(f"not found: {os.fspath(path)}") from exc
    except _DECODE_ERRORS as exc:
        raise UsageError(f"cannot decode image: {os.fspath(path)} ({exc})") from exc


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
    INTER_LINEAR on uint8, which 1.6.0 uses (workload-notes.md §7).
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
