"""Boxes for AutoBatch's probe batches: `count` distinct boxes tiling one network input.

Role: give both families' `probe_batch` the same dense, valid boxes (corners in input pixels,
x2 > x1, y2 > y1, inside 0..imgsz), so a probe's label assignment works as hard as the densest
training sample's. Must not: draw images, read data, or know a family's target layout.
"""

from __future__ import annotations

import math

import torch

_INSET = 0.1  # of a grid cell on each side: neighbouring boxes never touch


def grid_boxes(count: int, imgsz: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(count, 4) float32 x1 y1 x2 y2 boxes on a ceil(sqrt(count))-wide grid over the input,
    and their (count,) int64 grid indices (callers derive classes from them)."""
    side = max(1, math.ceil(math.sqrt(count)))
    cell = imgsz / side
    index = torch.arange(count)
    col, row = (index % side).to(torch.float32), (index // side).to(torch.float32)
    x1, y1 = (col + _INSET) * cell, (row + _INSET) * cell
    x2, y2 = (col + 1 - _INSET) * cell, (row + 1 - _INSET) * cell
    return torch.stack((x1, y1, x2, y2), dim=1), index
