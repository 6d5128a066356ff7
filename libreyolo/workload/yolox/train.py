"""One real YOLOX training step as 1.6.0 trains it, split into the phases the profiler times.

Role: hold the model (train mode), YOLOXLoss, SGD (momentum 0.9, nesterov, weight decay 5e-4 on
conv/linear weights only: 1.6.0's three groups and implementation, `libreyolo.workload.train.sgd`),
1.6.0's "yoloxwarmcos" learning rate set per iteration, AMP (fp16 autocast + GradScaler, CUDA
only), the EMA copy (decay 0.9998, ramp 1 - exp(-n / 2000)), and run one step as `to_device`,
`forward` (model + loss), `backward`, `optimizer` inside `phases(name)`, like
`libreyolo.workload.train.TrainStep`.

1.6.0's numbers (training/config.py, models/yolox/trainer.py, training/scheduler.py):
lr0 0.01 used as is (`effective_lr` = lr0: no lr-per-image x batch scaling, unlike upstream YOLOX),
no momentum warm-up, warm-up 5 epochs from lr 0, no-aug (plateau) 15 of 300 epochs, min lr ratio
0.05, L1 loss on from the first no-aug epoch (`use_l1`). A profile is iteration-based, so the
schedule takes iterations; `warmcos_schedule(iters_per_epoch)` gives 1.6.0's epoch defaults.

Must not: time, sync or profile anything itself, load data, print, or read losses back to the
host inside a step (the returned `StepLosses` converts once, when first read). The loss's own
host syncs (SimOTA's `.item()`s) are 1.6.0's and stay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor, nn

from libreyolo.document.phases import FORWARD, TO_DEVICE
from libreyolo.errors import UsageError
from libreyolo.workload.family import VariantPair
from libreyolo.workload.hooks import PhaseHook, no_phases
from libreyolo.workload.train import (
    BatchLike,
    ModelEMA,
    StepLosses,
    UpdateRecord,
    backward_and_update,
    build_optimizer,
    foreach_pair,
    layout_pair,
)
from libreyolo.workload.yolox.data import MAX_LABELS as YOLOX_MAX_LABELS

__all__ = [
    "EMA_DECAY",
    "WarmCos",
    "YOLOXLossLike",
    "YOLOXTrainStep",
    "warmcos_lr",
    "warmcos_schedule",
]

LR0 = 0.01  # TrainConfig.lr0, training/config.py:143
MOMENTUM = 0.9  # YOLOXConfig.momentum, training/config.py:508
WEIGHT_DECAY = 5e-4  # TrainConfig.weight_decay, training/config.py:145
EMA_DECAY = 0.9998  # YOLOXConfig.ema_decay, training/config.py:517 (tau 2000, as ModelEMA's)
WARMUP_EPOCHS = 5  # YOLOXConfig, training/config.py:509
WARMUP_LR_START = 0.0  # YOLOXConfig, training/config.py:510
NO_AUG_EPOCHS = 15  # YOLOXConfig, training/config.py:511 (the schedule's plateau)
MIN_LR_RATIO = 0.05  # YOLOXConfig, training/config.py:512
EPOCHS = 300  # TrainConfig.epochs, training/config.py:123


class YOLOXLossLike(Protocol):
    """What the step needs from a loss (`libreyolo.workload.yolox.loss.YOLOXLoss` fits)."""

    use_l1: bool

    def __call__(
        self, outputs: list[Tensor], targets: Tensor
    ) -> tuple[Tensor, dict[str, Tensor]]: ...


@dataclass(frozen=True, slots=True)
class WarmCos:
    """1.6.0's WarmupCosineScheduler in iterations (training/scheduler.py:26-72).

    lr(i) = (lr0 - start) * (i / warmup)^2 + start            for i <= warmup (warmup > 0)
          = lr0 * min_lr_ratio                                 for i >= total - plateau
          = min + (lr0 - min) * (1 + cos(pi * (i - warmup) / (total - warmup - plateau))) / 2
    with start = min(warmup_lr_start, lr0) and min = lr0 * min_lr_ratio.
    """

    total_iters: int
    warmup_iters: int
    plateau_iters: int = 0
    warmup_lr_start: float = WARMUP_LR_START
    min_lr_ratio: float = MIN_LR_RATIO

    def __post_init__(self) -> None:
        if self.warmup_iters < 0 or self.plateau_iters < 0:
            raise UsageError("warm-up and plateau iterations must not be negative")
        if self.total_iters <= self.warmup_iters + self.plateau_iters:
            raise UsageError(
                f"total_iters ({self.total_iters}) must exceed warm-up ({self.warmup_iters}) "
                f"+ plateau ({self.plateau_iters}) iterations"
            )


def warmcos_lr(iteration: int, lr0: float, schedule: WarmCos) -> float:
    """The learning rate of step `iteration` (0-based) under 1.6.0's "yoloxwarmcos"."""
    warmup, total, plateau = schedule.warmup_iters, schedule.total_iters, schedule.plateau_iters
    start = min(schedule.warmup_lr_start, lr0)
    min_lr = lr0 * schedule.min_lr_ratio
    if warmup > 0 and iteration <= warmup:
        return (lr0 - start) * (iteration / warmup) ** 2 + start
    if iteration >= total - plateau:
        return min_lr
    progress = (iteration - warmup) / (total - warmup - plateau)
    return min_lr + 0.5 * (lr0 - min_lr) * (1.0 + math.cos(math.pi * progress))


def warmcos_schedule(
    iters_per_epoch: int,
    *,
    epochs: int = EPOCHS,
    warmup_epochs: int = WARMUP_EPOCHS,
    no_aug_epochs: int = NO_AUG_EPOCHS,
) -> WarmCos:
    """1.6.0's default YOLOX schedule for an epoch of `iters_per_epoch` steps (300/5/15 epochs)."""
    return WarmCos(
        total_iters=iters_per_epoch * epochs,
        warmup_iters=iters_per_epoch * warmup_epochs,
        plateau_iters=iters_per_epoch * no_aug_epochs,
    )


class YOLOXTrainStep:
    """A YOLOX model, its loss, optimiser, schedule, AMP and EMA; `step()` runs one step.

    `schedule` None keeps lr at lr0 (a profile that measures steady steps); pass a `WarmCos`
    (e.g. `warmcos_schedule(iters_per_epoch)`) for 1.6.0's per-iteration lr. `warmup_iters` and
    `total_iters` are a shorthand for `WarmCos(total_iters, warmup_iters)` with no plateau.
    `use_l1` builds the default loss with 1.6.0's no-aug L1 term on (a passed `loss` keeps its
    own); the `use_l1` property flips it later, when mosaic closes. `channels_last` and
    `foreach_updates` as TrainStep.
    """

    target_rows = YOLOX_MAX_LABELS  # the collate's fixed rows per image (1.6.0's, not settable)

    def __init__(
        self,
        model: nn.Module,
        *,
        device: torch.device | str = "cpu",
        amp: bool = True,
        ema: bool = True,
        lr0: float = LR0,
        momentum: float = MOMENTUM,
        weight_decay: float = WEIGHT_DECAY,
        nesterov: bool = True,
        optimizer: str = "sgd",
        ema_decay: float = EMA_DECAY,
        warmup_iters: int = 0,
        total_iters: int | None = None,
        schedule: WarmCos | None = None,
        use_l1: bool = False,
        channels_last: bool = False,
        foreach_updates: bool = False,
        loss: YOLOXLossLike | None = None,
    ) -> None:
        if schedule is not None and total_iters is not None:
            raise UsageError("pass either schedule or total_iters/warmup_iters, not both")
        if schedule is None and total_iters is not None:
            schedule = WarmCos(total_iters=total_iters, warmup_iters=warmup_iters)
        elif schedule is None and warmup_iters > 0:
            raise UsageError("warmup_iters needs total_iters (the cosine runs to it)")
        self.device = torch.device(device)
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format
        self.model = model.to(self.device).to(memory_format=self.memory_format).train()
        if loss is None:
            from libreyolo.workload.yolox.loss import YOLOXLoss

            nc, strides = int(getattr(model, "nc", 80)), getattr(model, "strides", (8, 16, 32))
            loss = YOLOXLoss(nc, strides, use_l1=use_l1)
        self.loss: YOLOXLossLike = loss
        # AMP only on CUDA, as 1.6.0 (trainer.py: `config.amp and device.type == "cuda"`).
        self.amp_effective = amp and self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.amp_effective)
        self.lr0, self.schedule = lr0, schedule
        self.optimizer = build_optimizer(
            self.model,
            optimizer,
            lr0=lr0,
            momentum=momentum,
            weight_decay=weight_decay,
            nesterov=nesterov,
            foreach=foreach_updates,
        )
        self.ema = ModelEMA(self.model, ema_decay, foreach=foreach_updates) if ema else None
        # What the forward runs: the model, or its DDP wrapper on several ranks (`distribute`).
        self.forward_model: nn.Module = self.model
        self.updates = UpdateRecord()
        self.iteration = 0
        self._apply_schedule()

    @property
    def use_l1(self) -> bool:
        """Whether the loss adds its L1 term (1.6.0: from the first no-aug epoch on)."""
        return self.loss.use_l1

    @use_l1.setter
    def use_l1(self, value: bool) -> None:
        self.loss.use_l1 = value

    def step(self, batch: BatchLike, phases: PhaseHook = no_phases) -> StepLosses:
        """One optimisation step in the phases `to_device`, `forward`, `backward`, `optimizer`.

        `batch.images` (B, 3, S, S) BGR 0..255 and `batch.targets` (B, 50, 5) as
        `libreyolo.workload.yolox.data.collate` makes them. Returns detached `total`, `iou`,
        `obj`, `cls`, `l1` and `num_fg`, converted to floats only when read.
        """
        with phases(TO_DEVICE):
            images = batch.images.to(
                self.device, non_blocking=True, memory_format=self.memory_format
            )
            targets = batch.targets.to(self.device, non_blocking=True)
        autocast = torch.autocast(self.device.type, torch.float16, enabled=self.amp_effective)
        with phases(FORWARD), autocast:
            outputs = self.forward_model(images)
            total, parts = self.loss(outputs, targets)
        backward_and_update(total, self, phases)
        self.iteration += 1
        self._apply_schedule()
        return StepLosses({"total": total.detach(), **parts})

    def variant_pairs(self, batch: BatchLike) -> list[VariantPair]:
        """`channels_last` unless the step runs NHWC (`layout_pair`) and `foreach_updates`
        unless it runs it (`foreach_pair`); its targets are 1.6.0's fixed rows, so nothing to
        trim. Changes BN statistics and the weights: call after the measured steps."""
        images = batch.images.to(self.device, memory_format=self.memory_format)
        targets = batch.targets.to(self.device)

        def loss_of(net: nn.Module, x: Tensor) -> Tensor:
            with torch.autocast(self.device.type, torch.float16, enabled=self.amp_effective):
                return self.loss(net(x), targets)[0]

        return [*layout_pair(self.model, self.memory_format, images, loss_of), *foreach_pair(self)]

    @property
    def lr(self) -> float:
        """The learning rate the next step uses."""
        return float(self.optimizer.param_groups[0]["lr"])

    def _apply_schedule(self) -> None:
        """Set lr for the next step (host floats only), as 1.6.0 after every step."""
        if self.schedule is None:
            return
        lr = warmcos_lr(self.iteration, self.lr0, self.schedule)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
