"""The workload's public entry point: a weights argument -> a model in eval mode.

Name resolution (path, cache, download, announced random init) is `weights.resolve_weights`;
which family a file holds is `registry.detect_file`; the checkpoint's contents are that
family's `load`. This module only joins them, and for a measurement notes a random-init
fallback (`load_workload_model`).
"""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

import torch
from torch import nn

from libreyolo.workload.family import Workload
from libreyolo.workload.registry import DEFAULT_FAMILY, detect_file, family
from libreyolo.workload.weights import resolve_weights


class RandomWeightsWarning(UserWarning):
    """The model runs with random weights: convolution timings are real, detections are not."""


class LoadedModel(NamedTuple):
    """A measurement's model and the family that measures it."""

    workload: Workload
    model: nn.Module


def load_model(
    weights: str | os.PathLike[str],
    size: str | None = None,
    device: str | torch.device = "cpu",
) -> nn.Module:
    """A LibreYOLO model in eval mode from a checkpoint path or a known name (`LibreYOLO9t.pt`);
    its `family`, `size`, `nc` and `names` describe it.

    A known name that is neither cached nor downloadable gives a randomly initialised model of
    that size, with a RandomWeightsWarning and `model.random_init = True` so that a profile can
    record it.
    """
    return _load(weights, size, device, preferred=None).model


def load_workload_model(
    weights: str,
    size: str | None,
    device: str | torch.device,
    notes: list[str],
    family_name: str = DEFAULT_FAMILY,
) -> LoadedModel:
    """`load_model` for a measurement, with its family. `family_name` (the config's
    `model.family`) measures a random-init fallback; a checkpoint file decides its own family
    and size (`size`, when given, must match it, as it must match a published name's: a size
    is given only when the user asked for one, never by a default). A random-init fallback is
    announced again (a warning for the caller to show) and also appended to `notes`, so the
    profile records it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RandomWeightsWarning)
        loaded = _load(weights, size, device, preferred=family_name)
    for warning in caught:
        if issubclass(warning.category, RandomWeightsWarning):
            notes.append(f"random weights: {warning.message} (timings real, detections not)")
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return loaded


def workload_of(weights: str, family_name: str = DEFAULT_FAMILY) -> Workload:
    """The family `weights` would be measured with, without building a model or downloading:
    a file's own family, else the one its name says, else `family_name`."""
    resolved = resolve_weights(weights, download=False)
    if resolved.path is not None:
        return detect_file(resolved.path)[0]
    return family(resolved.family or family_name)


def _load(
    weights: str | os.PathLike[str],
    size: str | None,
    device: str | torch.device,
    *,
    preferred: str | None,
) -> LoadedModel:
    resolved = resolve_weights(str(weights), size_hint=size)
    if resolved.path is not None:
        workload, _, _ = detect_file(resolved.path)
        return LoadedModel(workload, workload.load(resolved.path, size=size, device=device))
    workload = family(resolved.family or preferred or DEFAULT_FAMILY)
    warnings.warn(resolved.warning or "random weights", RandomWeightsWarning, stacklevel=3)
    chosen = size or resolved.size or workload.default_size
    model = workload.build(chosen, 80, for_training=False).to(device).eval()
    model.random_init = True  # type: ignore[assignment]
    return LoadedModel(workload, model)
