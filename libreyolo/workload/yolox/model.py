"""The YOLOX detector (sizes n/t/s/m/l/x): CSPDarknet + PAFPN (`backbone`) and a decoupled `head`.

Forward contract of `YOLOX` (libreyolo 1.6.0's network, official YOLOX key names):
* input x (B, 3, H, W) float BGR 0..255 (no division by 255), H and W multiples of 32;
* eval: a list of 3 tensors (B, 5 + nc, H/s, W/s) for s = 8, 16, 32: 4 raw box regressions (grid
  offsets x, y and log sizes w, h, not decoded), the sigmoid objectness, nc sigmoid class scores;
* train: the same 3 tensors with raw logits for objectness and classes (the loss decodes them).

A freshly built model has the head biases 1.6.0 seeds before training (prior probability 0.01);
loading a checkpoint overwrites them. This module builds and runs the network; it must not touch
files, decode boxes or compute losses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from libreyolo.errors import UsageError
from libreyolo.workload.yolo9.model import default_names
from libreyolo.workload.yolox.blocks import HEAD_WIDTH, YOLOPAFPN, YOLOXHead

STRIDES = (8, 16, 32)
PRIOR_PROB = 0.01


@dataclass(frozen=True)
class YoloxSizeSpec:
    """Multipliers of one size, official YOLOX's (`SIZES`): depth and width on YOLOX-l's network."""

    depth: float
    width: float
    depthwise: bool
    default_imgsz: int

    @property
    def stem_width(self) -> int:
        """Output channels of the Focus stem: how a checkpoint's size is recognised."""
        return int(self.width * 64)

    @property
    def head_width(self) -> int:
        return int(HEAD_WIDTH * self.width)


SIZES: dict[str, YoloxSizeSpec] = {
    "n": YoloxSizeSpec(0.33, 0.25, True, 416),
    "t": YoloxSizeSpec(0.33, 0.375, False, 416),
    "s": YoloxSizeSpec(0.33, 0.50, False, 640),
    "m": YoloxSizeSpec(0.67, 0.75, False, 640),
    "l": YoloxSizeSpec(1.00, 1.00, False, 640),
    "x": YoloxSizeSpec(1.33, 1.25, False, 640),
}


class YOLOX(nn.Module):
    """YOLOX of size n/t/s/m/l/x with nc classes; the module docstring gives the contract."""

    family = "yolox"
    strides = STRIDES

    def __init__(self, size: str = "s", nc: int = 80, names: dict[int, str] | None = None) -> None:
        super().__init__()
        if size not in SIZES:
            raise UsageError(f"unknown YOLOX size {size!r}; expected one of {', '.join(SIZES)}")
        if nc < 1:
            raise UsageError(f"nc must be at least 1, got {nc}")
        spec = SIZES[size]
        self.size, self.nc = size, nc
        self.names = dict(names) if names is not None else default_names(nc)
        self.default_imgsz = spec.default_imgsz
        self.imgsz = spec.default_imgsz  # a checkpoint's `imgsz` replaces it
        self.random_init = False  # set by the loader when no weights could be had
        self.backbone = YOLOPAFPN(spec.depth, spec.width, depthwise=spec.depthwise)
        self.head = YOLOXHead(nc, spec.width, depthwise=spec.depthwise)
        self.head.initialize_biases(PRIOR_PROB)

    def forward(self, x: Tensor) -> list[Tensor]:
        outputs: list[Tensor] = self.head(self.backbone(x))
        return outputs

    def reset_classes(self, nc: int, names: dict[int, str]) -> None:
        """New class predictions for `nc` classes (a dataset's own), seeded as a fresh head's;
        everything else keeps its weights (what training a checkpoint on another dataset does)."""
        if nc < 1:
            raise UsageError(f"nc must be at least 1, got {nc}")
        if nc != self.nc:
            fresh = [
                nn.Conv2d(p.in_channels, nc, 1).to(p.weight.device, p.weight.dtype)
                for p in self.head.cls_preds
                if isinstance(p, nn.Conv2d)
            ]
            with torch.no_grad():  # the class prior of a fresh head; objectness keeps its own
                for conv in fresh:
                    assert conv.bias is not None
                    conv.bias.fill_(-math.log((1 - PRIOR_PROB) / PRIOR_PROB))
            self.head.cls_preds = nn.ModuleList(fresh)
            self.head.nc = nc
        self.nc, self.names = nc, dict(names)
