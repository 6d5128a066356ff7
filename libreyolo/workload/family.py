"""The Workload interface: everything a model family gives the collectors and the sweep.

Role: name the few things `measure/` and `sweep/` need from a family (build or load a model,
describe it, say whether a checkpoint is its own, fuse it, make its inference and training
steps, build its training data) so they never import a concrete family. A family is one object
implementing `Workload`, found by `workload.registry` (built-ins and the `libreyolo.workloads`
entry-point group). `InferStages` are the two per-family functions around the forward that
`workload.infer.InferStep` runs.
Must not: import a concrete family, torch-heavy helpers, or anything from `measure/`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch
    from PIL import Image
    from torch import nn
    from torch.utils.data import Dataset

    from libreyolo.workload.data.dataset_config import DatasetSpec
    from libreyolo.workload.hooks import PhaseHook
    from libreyolo.workload.train_keys import TrainKeys


@dataclass(frozen=True, slots=True)
class Description:
    """What a profile records about the model it measured."""

    family: str  # the registry name, e.g. "yolo9"
    size: str
    nc: int
    names: dict[int, str]
    num_params: int


@dataclass(frozen=True, slots=True)
class TrainOptions:
    """How far the training step departs from libreyolo 1.6.0's own, as the user asked.

    `max_labels`: 1.6.0's key, the target rows per image (None: the family's 1.6.0 default).
    `variants`: this package's speed-ups the run opts into (`defaults.TRAIN_VARIANTS`); none
    means 1.6.0's work per step. `keys`: 1.6.0's training keys, resolved
    (`train_keys.resolve`). A family refuses (UsageError) an option it cannot honour, so
    a profile never records a setting that did not take effect.
    """

    max_labels: int | None = None
    variants: frozenset[str] = frozenset()
    keys: TrainKeys | None = None  # 1.6.0's training keys (None: the family's 1.6.0 defaults)

    def keys_for(self, family: str) -> TrainKeys:
        """The keys the step runs with: `keys`, else `family`'s 1.6.0 defaults."""
        from libreyolo.workload.train_keys import family_keys

        return self.keys if self.keys is not None else family_keys(family)


FAITHFUL = TrainOptions()  # 1.6.0's step: its max_labels, none of this package's variants


class VariantPair(NamedTuple):
    """The part of a training step one speed-up changes, as the run does it and as the variant
    would: zero-argument callables that each do that part once on the same batch. A runner
    that offers them (`variant_pairs(batch)`) has the variants it did not use timed after the
    window; the runner never times them itself."""

    variant: str  # a name in defaults.TRAIN_VARIANTS
    part: str  # what the callables do, in words a summary can print
    as_run: Callable[[], object]
    with_variant: Callable[[], object]


class DetectionsLike(Protocol):
    """One image's detections (`yolo9.predict.Detections` fits): tensors, moved to the host."""

    @property
    def boxes(self) -> torch.Tensor: ...
    @property
    def scores(self) -> torch.Tensor: ...
    @property
    def classes(self) -> torch.Tensor: ...


class InferStages(NamedTuple):
    """A family's predict path around the forward.

    preprocess(images, *, imgsz, device) -> (batch tensor on device, per-image letterboxes)
    postprocess(outputs, letterboxes, *, conf, iou, max_det) -> one detections per image
    """

    preprocess: Callable[..., tuple[torch.Tensor, Sequence[Any]]]
    postprocess: Callable[..., Sequence[DetectionsLike]]


class InferRunner(Protocol):
    """One inference call per `step`, in the phases preprocess, forward, postprocess."""

    @property
    def amp_effective(self) -> bool: ...
    def step(self, iteration: int, phases: PhaseHook = ...) -> None: ...
    def detect(self, iteration: int) -> tuple[object, Sequence[DetectionsLike]]: ...


class TrainRunner(Protocol):
    """One optimisation step per `step`, in the phases to_device, forward, backward, optimizer;
    returns the detached losses (at least `total`), read back to the host only when read.
    A runner that keeps an `updates` record (`workload.train.UpdateRecord`, filled by
    `backward_and_update`) has its GradScaler's skipped steps counted in the profile."""

    @property
    def amp_effective(self) -> bool: ...
    def step(self, batch: Any, phases: PhaseHook = ...) -> Mapping[str, float]: ...


@runtime_checkable
class Workload(Protocol):
    """A model family as the collectors see it. Sizes are short strings ("t", "s", ...)."""

    name: str  # registry name, recorded as the profile's `model_family`
    sizes: tuple[str, ...]
    default_size: str
    stride: int  # input sides must be multiples of it
    fuse_modes: tuple[str, ...]  # the `model.fuse` modes it has besides "none"; () when none

    def default_imgsz(self, size: str) -> int:
        """The input side when the user gives none (`--imgsz 0`)."""
        ...

    def model_name(self, size: str) -> str:
        """The published name of a size, e.g. "LibreYOLO9t" (the profile's `run.model`)."""
        ...

    def claims_name(self, stem: str) -> str | None:
        """The size when a file stem (`LibreYOLO9t`) is this family's published name, else None."""
        ...

    def detect(self, checkpoint: Mapping[str, Any]) -> tuple[str | None, int | None] | None:
        """(size, nc), either None when unknown, if the read checkpoint dict holds this family's
        weights (by its keys; metadata is the registry's business), else None."""
        ...

    def build(self, size: str, nc: int, *, for_training: bool) -> nn.Module:
        """A randomly initialised model; `for_training` adds what training needs (e.g. PGI)."""
        ...

    def load(
        self, path: str | os.PathLike[str], *, size: str | None, device: str | torch.device
    ) -> nn.Module:
        """The checkpoint's model in eval mode on `device`; one-line CheckpointError otherwise."""
        ...

    def describe(self, model: nn.Module) -> Description:
        """Family, size, classes and parameter count of one of this family's models."""
        ...

    def reset_classes(self, model: nn.Module, nc: int, names: dict[int, str]) -> None:
        """Fresh class layers for `nc` classes (training on a dataset with other classes)."""
        ...

    def fuse(self, model: nn.Module, mode: str) -> nn.Module:
        """The model fused for inference in one of `fuse_modes` (may reuse `model`'s storage)."""
        ...

    def infer_step(
        self,
        model: nn.Module,
        images: Sequence[Image.Image],
        paths: Sequence[Path],
        *,
        imgsz: int,
        batch: int,
        device: torch.device,
        conf: float,
        iou: float,
        max_det: int,
        half: bool,
        amp_dtype: torch.dtype,
        include_decode: bool,
    ) -> InferRunner:
        """The predict path of `model` over these images (see `workload.infer.InferStep`)."""
        ...

    def train_step(
        self,
        model: nn.Module,
        *,
        device: torch.device,
        amp: bool,
        ema: bool = True,
        channels_last: bool = False,
        options: TrainOptions = FAITHFUL,
    ) -> TrainRunner:
        """The training step of `model` with the family's loss, optimiser, AMP path and EMA;
        `channels_last` runs its weights and inputs NHWC; `options` as `TrainOptions` (a
        UsageError for one the family cannot honour)."""
        ...

    def train_dataset(
        self,
        spec: DatasetSpec,
        imgsz: int,
        *,
        seed: int,
        cache: bool,
        options: TrainOptions = FAITHFUL,
    ) -> Dataset[Any]:
        """The family's training data: the dataset with its augmentations at `imgsz`, as
        `options.keys` set them (rates, ranges, the no-augmentation phase)."""
        ...

    def collate(self, samples: list[Any]) -> Any:
        """Samples of `train_dataset` into one batch for `train_step`."""
        ...

    def probe_batch(self, batch: int, imgsz: int, nc: int, *, boxes_per_image: int = 1) -> Any:
        """A random batch of `batch` images in `collate`'s form, each with `boxes_per_image`
        boxes (at most what the family's targets hold), for AutoBatch's probes."""
        ...
