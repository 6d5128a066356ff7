"""libreyolo: the `libreyolo profile` command group and the YOLOv9 workload it measures.

Importing this package imports no torch, numpy or hydra: readers start fast. `load_model`
imports the model stack (torch) when it is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import nn

__version__ = "2.0.0.dev0"
__all__ = ["__version__", "load_model"]


def load_model(weights: str, size: str | None = None, device: Any = "cpu") -> nn.Module:
    """A LibreYOLO model in eval mode: call it on a (B, 3, H, W) float tensor in [0, 1] to get
    the decoded (B, 4 + nc, anchors) tensor; `names`, `nc`, `size` and `family` describe it."""
    from libreyolo.workload.api import load_model as load

    return load(weights, size=size, device=device)
