"""The workload's public entry points: weights argument -> model in eval mode.

`resolve_weights` is the one place where a user's weights argument becomes a file path (name
resolution, e.g. `LibreYOLO9t.pt` -> `weights/LibreYOLO9t.pt`, is added there later). This module
must not parse checkpoint contents itself; that is `yolo9.checkpoint`.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from torch import nn

from libreyolo.errors import MissingFileError
from libreyolo.workload.yolo9.checkpoint import load_checkpoint


def resolve_weights(weights: str | os.PathLike[str]) -> Path:
    """The existing weights file that `weights` names; for now only literal paths are accepted."""
    path = Path(weights).expanduser()
    if not path.is_file():
        raise MissingFileError(
            f"weights file not found: {weights}",
            hint="pass the path of a LibreYOLO9 .pt checkpoint",
        )
    return path


def load_model(
    weights: str | os.PathLike[str],
    size: str | None = None,
    device: str | torch.device = "cpu",
) -> nn.Module:
    """A LibreYOLO model in eval mode from a checkpoint; `size` must agree with the file's."""
    return load_checkpoint(resolve_weights(weights), size=size, device=device)
