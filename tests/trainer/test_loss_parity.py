"""The built-in YOLOv9 loss gives libreyolo 1.6.0's values and gradients: the same head maps and
boxes through 1.6.0's own `YOLO9Loss` (in its environment, its files unedited) and through ours,
with 1.6.0's 300 target rows per image and arithmetic, and with the `trimmed_targets` and
`vectorised_assigner` variants."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch

from libreyolo.workload.yolo9.loss import YOLOv9Loss, fit_rows, pad_targets
from tests.trainer.v1_env import v1_python

NC = 3
IMGSZ = (96, 64)  # (H, W): not square, so a swapped axis shows
STRIDES = (8, 16, 32)
REG_MAX = 16

# Runs in 1.6.0's environment: its loss on the saved maps and its padded, normalised targets.
V1_LOSS = """
import sys, torch
from libreyolo.models.yolo9.loss import YOLO9Loss
saved = torch.load(sys.argv[1])
h, w = saved["imgsz"]
loss = YOLO9Loss(num_classes=saved["nc"], reg_max=16, strides=[8, 16, 32], image_size=[w, h],
                 device=torch.device("cpu"), distributed_normalize=False)
maps = [m.requires_grad_(True) for m in saved["maps"]]
out = loss(maps, saved["targets"])
result = {k: out[k].detach() for k in ("total_loss", "box", "dfl", "cls")}
result["grads"] = torch.autograd.grad(out["total_loss"], maps)
torch.save(result, sys.argv[2])
"""


def _batch() -> tuple[list[torch.Tensor], torch.Tensor]:
    """Head maps of a 2-image batch and its boxes as (image, class, x1, y1, x2, y2) pixels."""
    generator = torch.Generator().manual_seed(0)
    h, w = IMGSZ
    maps = [torch.randn(2, 4 * REG_MAX + NC, h // s, w // s, generator=generator) for s in STRIDES]
    rows = torch.tensor(
        [
            [0, 1, 4.0, 6.0, 30.0, 40.0],
            [0, 2, 20.0, 50.0, 60.0, 90.0],
            [0, 0, 33.0, 10.0, 41.0, 21.0],
            [1, 2, 10.0, 10.0, 54.0, 80.0],
        ]
    )
    return maps, rows


def _v1_losses(tmp_path: Path, maps: list[torch.Tensor], rows: torch.Tensor) -> dict:
    h, w = IMGSZ
    normalised = fit_rows(pad_targets(rows, 2), 300)  # 1.6.0's transforms' form: 0..1 corners
    normalised[..., 1:] /= torch.tensor([w, h, w, h])
    saved, result = tmp_path / "in.pt", tmp_path / "out.pt"
    torch.save({"maps": maps, "targets": normalised, "imgsz": IMGSZ, "nc": NC}, saved)
    subprocess.run(
        [v1_python(), "-c", V1_LOSS, str(saved), str(result)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
        timeout=300,
    )
    return torch.load(result)


@pytest.mark.parametrize(
    "variant", ["max_labels", "trimmed_targets", "vectorised_assigner", "both variants"]
)
def test_our_loss_gives_1_6_0s_values(tmp_path: Path, variant: str) -> None:
    maps, rows = _batch()
    theirs = _v1_losses(tmp_path, maps, rows)
    trimmed = pad_targets(rows, 2)
    targets = trimmed if "trimmed" in variant or "both" in variant else fit_rows(trimmed, 300)
    leaves = [m.clone().requires_grad_(True) for m in maps]
    vectorised = "vectorised" in variant or "both" in variant
    total, parts = YOLOv9Loss(NC, STRIDES, REG_MAX, vectorised=vectorised)(leaves, targets, IMGSZ)
    assert theirs["total_loss"].item() > 0
    torch.testing.assert_close(total, theirs["total_loss"], rtol=1e-4, atol=1e-5)
    for name in ("box", "dfl", "cls"):
        torch.testing.assert_close(parts[name], theirs[name], rtol=1e-4, atol=1e-5)
    for ours, theirs_grad in zip(torch.autograd.grad(total, leaves), theirs["grads"], strict=True):
        torch.testing.assert_close(ours, theirs_grad, rtol=1e-3, atol=1e-6)
