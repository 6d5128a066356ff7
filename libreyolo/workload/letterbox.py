"""Letterbox geometry: where an image lands in the square network input, and how boxes map
between the two. One definition for training (PIL, `data/augment.py`) and inference (tensors
on the device, `yolo9/predict.py`); they differ only in how they resize pixels.

Must not: touch pixels, import PIL or torchvision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from libreyolo.errors import UsageError

PAD_VALUE = 114  # grey used by every YOLO letterbox, in 0..255
PadMode = Literal["topleft", "center"]


@dataclass(frozen=True, slots=True)
class Letterbox:
    """How one image was placed in the square network input; enough to map boxes back.

    input = original × scale + (pad_x, pad_y); the resized image occupies new_w × new_h pixels.
    """

    orig_w: int
    orig_h: int
    imgsz: int
    scale: float
    new_w: int
    new_h: int
    pad_x: int
    pad_y: int

    @classmethod
    def fit(cls, orig_w: int, orig_h: int, imgsz: int, pad: PadMode = "topleft") -> Letterbox:
        """The placement of an orig_w × orig_h image in an imgsz² input (up- or down-scaling)."""
        if orig_w <= 0 or orig_h <= 0:
            raise UsageError(f"image has no pixels: {orig_w}x{orig_h}")
        scale = min(imgsz / orig_h, imgsz / orig_w)
        new_w = min(imgsz, max(1, round(orig_w * scale)))
        new_h = min(imgsz, max(1, round(orig_h * scale)))
        if pad == "topleft":
            pad_x = pad_y = 0
        elif pad == "center":
            pad_x, pad_y = (imgsz - new_w) // 2, (imgsz - new_h) // 2
        else:
            raise UsageError(f"letterbox pad must be 'topleft' or 'center'; got {pad!r}")
        return cls(orig_w, orig_h, imgsz, scale, new_w, new_h, pad_x, pad_y)

    def to_original(self, boxes: torch.Tensor) -> torch.Tensor:
        """Map (K, 4) xyxy input-pixel boxes to original pixels, clipped to the image."""
        offset = boxes.new_tensor([self.pad_x, self.pad_y, self.pad_x, self.pad_y])
        out = (boxes - offset) / self.scale
        out[:, 0::2] = out[:, 0::2].clamp(0, self.orig_w)
        out[:, 1::2] = out[:, 1::2].clamp(0, self.orig_h)
        return out

    def to_input(self, boxes: torch.Tensor) -> torch.Tensor:
        """Map (K, 4) xyxy original-pixel boxes into the network input (inverse of to_original)."""
        offset = boxes.new_tensor([self.pad_x, self.pad_y, self.pad_x, self.pad_y])
        return boxes * self.scale + offset
