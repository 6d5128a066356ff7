"""The workload's public entry point: a weights argument -> a model in eval mode.

Name resolution (path, cache, download, announced random init) is `weights.resolve_weights`;
checkpoint contents are `yolo9.checkpoint`. This module only joins the two, and for a
measurement notes a random-init fallback (`load_workload_model`).
"""

from __future__ import annotations

import os
import warnings

import torch

from libreyolo.workload.weights import resolve_weights
from libreyolo.workload.yolo9.checkpoint import load_checkpoint
from libreyolo.workload.yolo9.model import YOLOv9


class RandomWeightsWarning(UserWarning):
    """The model runs with random weights: convolution timings are real, detections are not."""


def load_model(
    weights: str | os.PathLike[str],
    size: str | None = None,
    device: str | torch.device = "cpu",
) -> YOLOv9:
    """A LibreYOLO model in eval mode from a checkpoint path or a known name (`LibreYOLO9t.pt`).

    A known name that is neither cached nor downloadable gives a randomly initialised model of
    that size, with a RandomWeightsWarning and `model.random_init = True` so that a profile can
    record it.
    """
    resolved = resolve_weights(str(weights), size_hint=size)
    if resolved.path is not None:
        return load_checkpoint(resolved.path, size=size, device=device)
    warnings.warn(resolved.warning or "random weights", RandomWeightsWarning, stacklevel=2)
    model = YOLOv9(size=size or resolved.size or "t").to(device).eval()
    model.random_init = True
    return model


def load_workload_model(
    weights: str, size: str | None, device: str | torch.device, notes: list[str]
) -> YOLOv9:
    """`load_model` for a measurement: a random-init fallback is announced again (a warning for
    the caller to show) and also appended to `notes`, so the profile records it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RandomWeightsWarning)
        model = load_model(weights, size=size, device=device)
    for warning in caught:
        if issubclass(warning.category, RandomWeightsWarning):
            notes.append(f"random weights: {warning.message} (timings real, detections not)")
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return model
