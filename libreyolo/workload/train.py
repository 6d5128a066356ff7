"""One real YOLOv9 training step, split into the phases the profiler times.

Role: hold the model (train mode), its loss, SGD with libreyolo's three parameter groups, an
optional linear warm-up, AMP (fp16 autocast + GradScaler, CUDA only) and the EMA copy, and run one
optimisation step as `to_device`, `forward` (model + loss), `backward`, `optimizer` (scaler
step/update, zero_grad, EMA update), each inside `phases(name)`: 1.6.0's trainer's settings and
order, with its phase names.

Must not: time, sync or profile anything itself (the caller's `phases` hook does that), load data,
print, or read losses back to the host inside a step: the returned `StepLosses` converts its
tensors with one `.tolist()` only when first read.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Protocol

import torch
from torch import Tensor, nn

from libreyolo.document.phases import BACKWARD, FORWARD, OPTIMIZER, STEP_PHASES, TO_DEVICE
from libreyolo.errors import UsageError
from libreyolo.workload.data.loader import Batch
from libreyolo.workload.family import VariantPair
from libreyolo.workload.hooks import PhaseHook, no_phases
from libreyolo.workload.yolo9.loss import YOLOv9Loss, fit_rows, pad_targets
from libreyolo.workload.yolo9.model import TrainOutput

PHASES = STEP_PHASES

LR0 = 0.01
MOMENTUM = 0.937
WEIGHT_DECAY = 5e-4
WARMUP_LR_START = 1e-4  # capped at lr0
WARMUP_MOMENTUM = 0.8
EMA_DECAY = 0.9999
EMA_TAU = 2000.0  # updates over which the EMA decay ramps up (1 - e^-1 of the way at tau)
MAX_LABELS = 300  # 1.6.0's YOLO9Config.max_labels: target rows per image its loss assigns over
AUX_WEIGHT = 0.25  # 1.6.0's YOLO9Config.aux_weight: the PGI aux head's share of the loss


class BatchLike(Protocol):
    """What a step needs from a batch (`libreyolo.workload.data.loader.Batch` fits)."""

    @property
    def images(self) -> Tensor:
        """(B, 3, H, W) float32 in [0, 1]."""

    @property
    def targets(self) -> Tensor:
        """(N, 6) rows (image, class, x1, y1, x2, y2) in input pixels."""

    @property
    def padded_targets(self) -> Tensor | None:
        """The rows grouped as (B, T, 5) (`pad_targets`), or None: the step pads them."""


def with_padded_targets(batch: Batch) -> Batch:
    """`batch` with its dense targets: made where the batch is built (the collate, in a loader
    worker), so they come pinned with the images. Padding them in the step made a pageable
    tensor whose `non_blocking` copy waits for the stream, so every step lost its run-ahead."""
    padded = pad_targets(batch.targets, batch.images.shape[0])
    return batch._replace(padded_targets=padded)


def _as_leaves(outputs: TrainOutput | Sequence[Tensor]) -> TrainOutput:
    """The head maps of a train-mode forward as detached leaves that want gradients."""
    main, aux = (
        (outputs.main, outputs.aux) if isinstance(outputs, TrainOutput) else (list(outputs), None)
    )

    def leaf(maps: Sequence[Tensor]) -> list[Tensor]:
        return [m.detach().requires_grad_(True) for m in maps]

    return TrainOutput(leaf(main), leaf(aux) if aux is not None else None)


# One optimiser parameter group: "params" and their "weight_decay" (torch.optim takes dicts).
ParamGroup = dict[str, list[nn.Parameter] | float]


def param_groups(model: nn.Module, weight_decay: float = WEIGHT_DECAY) -> list[ParamGroup]:
    """libreyolo's SGD groups: norm weights (no decay), other weights (decay), the rest (none).

    "The rest" is biases and any stray parameter that is neither a weight nor a bias.
    """
    norm: list[nn.Parameter] = []
    decay: list[nn.Parameter] = []
    rest: list[nn.Parameter] = []
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad:
                continue
            if name == "weight" and isinstance(module, nn.modules.batchnorm._NormBase):
                norm.append(param)
            elif name == "weight":
                decay.append(param)
            else:
                rest.append(param)
    return [
        {"params": norm, "weight_decay": 0.0},
        {"params": decay, "weight_decay": weight_decay},
        {"params": rest, "weight_decay": 0.0},
    ]


class ModelEMA:
    """Exponential moving average of every floating state-dict entry (parameters and BN stats).

    decay(n) = `decay` x (1 - exp(-n / tau)) after n updates, so early updates follow the model.
    By default each update does 1.6.0's work (`training/ema.py`): both state dicts walked, then
    two foreach calls on CUDA and a per-tensor loop elsewhere. `foreach=True` (the
    `foreach_updates` variant) keeps the tensor lists and makes one `_foreach_lerp_` call.
    """

    def __init__(
        self,
        model: nn.Module,
        decay: float = EMA_DECAY,
        tau: float = EMA_TAU,
        *,
        foreach: bool = False,
    ) -> None:
        self.module = copy.deepcopy(model).eval().requires_grad_(False)
        self.decay, self.tau, self.updates = decay, tau, 0
        self.foreach = foreach
        self._pairs: tuple[int, list[Tensor], list[Tensor]] | None = None

    def current_decay(self) -> float:
        """The decay the next update uses."""
        return self.decay * (1 - math.exp(-(self.updates + 1) / self.tau))

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        """ema = d * ema + (1 - d) * model over all floating entries."""
        decay = self.current_decay()
        self.updates += 1
        if self.foreach:
            ema, live = self._tensors(model)
            torch._foreach_lerp_(ema, live, 1 - decay)
            return
        live_sd = model.state_dict()
        ema_values, live_values = [], []
        for key, value in self.module.state_dict().items():
            if value.dtype.is_floating_point:
                ema_values.append(value)
                live_values.append(live_sd[key])
        if ema_values and ema_values[0].is_cuda:
            torch._foreach_mul_(ema_values, decay)
            torch._foreach_add_(ema_values, live_values, alpha=1 - decay)
        else:
            for value, live in zip(ema_values, live_values, strict=True):
                value.mul_(decay).add_(live, alpha=1 - decay)

    def _tensors(self, model: nn.Module) -> tuple[list[Tensor], list[Tensor]]:
        # Built once: walking a 2,000-entry state dict every step is measurable host time.
        if self._pairs is None or self._pairs[0] != id(model):
            live_sd, ema_sd = model.state_dict(), self.module.state_dict()
            keys = [k for k, v in live_sd.items() if v.is_floating_point()]
            self._pairs = (id(model), [ema_sd[k] for k in keys], [live_sd[k] for k in keys])
        return self._pairs[1], self._pairs[2]


def build_optimizer(
    model: nn.Module,
    name: str = "sgd",
    *,
    lr0: float = LR0,
    momentum: float = MOMENTUM,
    weight_decay: float = WEIGHT_DECAY,
    nesterov: bool = True,
    foreach: bool = False,
) -> torch.optim.Optimizer:
    """1.6.0's optimizer `name` over `param_groups`, built as its `build_optimizer`
    (`training/optim.py`) builds it: SGD never fused (`_FUSED_UNSAFE`), so torch's default, a
    per-parameter loop on the CPU and foreach on CUDA; Adam and AdamW (lr only, torch's betas)
    fused when every parameter is on CUDA. `foreach=True` (the `foreach_updates` variant): one
    multi-tensor update on every device where the optimizer is not fused."""
    groups = param_groups(model, weight_decay)
    chosen = True if foreach else None
    if name == "sgd":
        return torch.optim.SGD(groups, lr=lr0, momentum=momentum, nesterov=nesterov, foreach=chosen)
    adam = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}.get(name)
    if adam is None:
        raise UsageError(f"optimizer {name!r}: libreyolo 1.6.0 has sgd, adam and adamw")
    if all(p.is_cuda for p in model.parameters()):
        return adam(groups, lr=lr0, fused=True)
    return adam(groups, lr=lr0, foreach=chosen)


class StepLosses(Mapping[str, float]):
    """Detached loss values of one step; one host sync (`.tolist()`) on the first value read."""

    def __init__(self, tensors: dict[str, Tensor]) -> None:
        self._tensors = tensors
        self._values: dict[str, float] | None = None

    def _load(self) -> dict[str, float]:
        if self._values is None:
            flat = torch.stack([t.detach().float().reshape(()) for t in self._tensors.values()])
            self._values = dict(zip(self._tensors, flat.tolist(), strict=True))
        return self._values

    def __getitem__(self, key: str) -> float:
        return self._load()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)  # keys need no sync

    def __len__(self) -> int:
        return len(self._tensors)


class UpdateRecord:
    """Which steps' optimiser updates GradScaler skipped (fp16 gradients with inf/NaN).

    GradScaler decides per step from a found-inf flag it computes on the device (a fused
    optimiser even skips on the device, so counting `optimizer.step` calls would miss it). A
    fresh flag tensor is made every step and never reused, so keeping a reference costs no
    kernel and no sync; `skipped()` reads them all with one transfer, after the window.
    """

    def __init__(self) -> None:
        self._flags: list[Tensor | None] = []  # per step; None: the scaler was disabled

    def add(self, scaler: torch.amp.GradScaler, optimizer: torch.optim.Optimizer) -> None:
        """Record this step's flag; call between `scaler.step` and `scaler.update`."""
        flag = None
        if scaler.is_enabled():  # one device is measured, so one flag
            state = scaler._per_optimizer_states[id(optimizer)]  # private: no public reader
            flag = next(iter(state["found_inf_per_device"].values()), None)
        self._flags.append(flag)

    def skipped(self) -> list[int]:
        """The steps (0-based, in order) whose update was skipped."""
        known = [(i, f) for i, f in enumerate(self._flags) if f is not None]
        if not known:
            return []
        values = torch.stack([f.detach().float().reshape(()) for _, f in known]).tolist()
        return [i for (i, _), value in zip(known, values, strict=True) if value > 0]


def skipped_updates(runner: object) -> list[int]:
    """The steps so far (0-based) whose update a training runner's GradScaler skipped, read
    with one host transfer; [] for a runner that keeps no `UpdateRecord` (a third-party
    family's may not)."""
    updates = getattr(runner, "updates", None)
    return updates.skipped() if isinstance(updates, UpdateRecord) else []


class Optimising(Protocol):
    """What `backward_and_update` needs of a training step (read-only, so any optimiser fits)."""

    @property
    def model(self) -> nn.Module: ...
    @property
    def scaler(self) -> torch.amp.GradScaler: ...
    @property
    def optimizer(self) -> torch.optim.Optimizer: ...
    @property
    def ema(self) -> ModelEMA | None: ...
    @property
    def updates(self) -> UpdateRecord: ...


def backward_and_update(total: Tensor, step: Optimising, phases: PhaseHook) -> None:
    """The `backward` and `optimizer` phases every family's step ends with: scaled backward,
    scaler step (its skip recorded) and update, zero_grad, EMA update."""
    with phases(BACKWARD):
        torch.autograd.backward(step.scaler.scale(total))
    with phases(OPTIMIZER):
        step.scaler.step(step.optimizer)
        step.updates.add(step.scaler, step.optimizer)
        step.scaler.update()
        step.optimizer.zero_grad(set_to_none=True)
        if step.ema is not None:
            step.ema.update(step.model)


# The variants (defaults.TRAIN_VARIANTS) a step of this module knows by name.
TRIMMED_TARGETS = "trimmed_targets"
FOREACH_UPDATES = "foreach_updates"
CHANNELS_LAST = "channels_last"
VECTORISED_ASSIGNER = "vectorised_assigner"


def foreach_pair(step: Optimising) -> list[VariantPair]:
    """`foreach_updates` against the SGD step and EMA update as run, unless the step runs the
    variant already: both on the step's own optimizer and EMA (its momentum buffers), with
    zero gradients on every parameter (an update's cost does not depend on their values).
    Changes the weights a little (weight decay): call after the measured steps."""
    optimizer, ema = step.optimizer, step.ema
    as_run = [group["foreach"] for group in optimizer.param_groups]
    fused = any(group.get("fused") for group in optimizer.param_groups)
    if (fused or all(flag is True for flag in as_run)) and (ema is None or ema.foreach):
        return []
    for group in optimizer.param_groups:
        for param in group["params"]:
            param.grad = torch.zeros_like(param)

    ema_as_run = ema is not None and ema.foreach

    def use(variant: bool) -> None:
        for group, flag in zip(optimizer.param_groups, as_run, strict=True):
            group["foreach"] = True if variant and not fused else flag
        if ema is not None:
            ema.foreach = variant or ema_as_run

    def update(variant: bool) -> Callable[[], object]:
        def run() -> object:
            use(variant)
            try:
                optimizer.step()
                if ema is not None:
                    ema.update(step.model)
            finally:
                use(False)  # the step as it ran, whatever comes after
            return None

        return run

    kind = type(optimizer).__name__
    updates = f"{kind} step and EMA" if ema else f"{kind} step"
    part = f"the weight update ({updates}, as 1.6.0 runs them)"
    return [VariantPair(FOREACH_UPDATES, part, update(False), update(True))]


def layout_pair(
    model: nn.Module,
    memory_format: torch.memory_format,
    images: Tensor,
    loss_of: Callable[[nn.Module, Tensor], Tensor],
) -> list[VariantPair]:
    """`channels_last` against the NCHW forward and backward a step runs (1.6.0's layout),
    unless it runs NHWC already or is compiled (its graph is for one layout): `loss_of(net, x)`
    is the step's forward with its loss, run on the step's model and on an NHWC copy of it, each
    with its images in its layout; gradients are dropped after each pass. Changes BN statistics:
    call after the measured steps."""
    if memory_format == torch.channels_last or hasattr(model, "_orig_mod"):
        return []
    nhwc = copy.deepcopy(model).to(memory_format=torch.channels_last)
    nhwc_images = images.contiguous(memory_format=torch.channels_last)

    def passes(net: nn.Module, x: Tensor) -> Callable[[], object]:
        def run() -> object:
            loss_of(net, x).backward()
            net.zero_grad(set_to_none=True)
            return None

        return run

    part = "the forward and backward with the loss, NCHW as 1.6.0 runs them"
    return [VariantPair(CHANNELS_LAST, part, passes(model, images), passes(nhwc, nhwc_images))]


class TrainStep:
    """A YOLOv9 model, its loss, optimiser, AMP and EMA; `step()` runs one optimisation step.

    Build the model with `aux=True` for the reference's PGI training (main + 0.25 x aux loss).
    `channels_last` runs the convolutions in NHWC (the `channels_last` variant: same values,
    often faster; 1.6.0 trains NCHW). `target_rows`: the
    target rows per image the loss assigns over (1.6.0's `max_labels`, 300); None trims them to
    the batch's most crowded image (same values, less work). `vectorised_assigner`: the loss's
    cheaper arithmetic for the same values (`YOLOv9Loss(vectorised=True)`). `foreach_updates`:
    SGD and the EMA as one multi-tensor update each on every device (1.6.0 loops per tensor on
    the CPU).
    `warmup_iters` > 0 ramps lr from min(1e-4, lr0) to lr0 and momentum from 0.8 to 0.937
    linearly over that many steps; 0 (the default) starts at lr0 and 0.937. `optimizer`,
    `nesterov` and `ema_decay` are 1.6.0's keys (`build_optimizer`).
    """

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
        channels_last: bool = False,
        target_rows: int | None = MAX_LABELS,
        aux_weight: float = AUX_WEIGHT,
        foreach_updates: bool = False,
        vectorised_assigner: bool = False,
        loss: YOLOv9Loss | None = None,
    ) -> None:
        self.device = torch.device(device)
        # NHWC (a variant): faster CPU steps (oneDNN) and the layout cuDNN prefers under AMP.
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format
        self.model = model.to(self.device).to(memory_format=self.memory_format).train()
        nc, strides = int(getattr(model, "nc", 80)), getattr(model, "strides", (8, 16, 32))
        self.loss = loss or YOLOv9Loss(
            nc,
            strides,
            int(getattr(model, "reg_max", 16)),
            aux_weight=aux_weight,
            vectorised=vectorised_assigner,
        )
        # AMP only on CUDA, as the reference: on CPU a plain fp32 step with a disabled scaler.
        self.amp_effective = amp and self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.amp_effective)
        self.lr0, self.momentum, self.warmup_iters = lr0, momentum, warmup_iters
        self.target_rows = target_rows
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

    def step(self, batch: BatchLike, phases: PhaseHook = no_phases) -> StepLosses:
        """One optimisation step in the phases `to_device`, `forward`, `backward`, `optimizer`.

        Returns detached `total`, `box`, `dfl`, `cls` (weighted) and `num_fg` (positive anchors
        per image), converted to floats only when read.
        """
        with phases(TO_DEVICE):
            images, trimmed = self._to_device(batch)
            targets = fit_rows(trimmed, self.target_rows)
        autocast = torch.autocast(self.device.type, torch.float16, enabled=self.amp_effective)
        with phases(FORWARD), autocast:
            outputs = self.forward_model(images)
            total, parts = self.loss(outputs, targets, (images.shape[2], images.shape[3]))
        backward_and_update(total, self, phases)
        self.iteration += 1
        self._apply_schedule()
        return StepLosses({"total": total.detach(), **parts})

    def variant_pairs(self, batch: BatchLike) -> list[VariantPair]:
        """The variants this step does not run, each against the part it changes:
        `trimmed_targets` (unless it trims already) and `vectorised_assigner` (unless it runs
        it), the loss's forward and backward on `batch` from one forward of the model whose maps
        are leaves, so a pair differs only in the target rows or the loss's arithmetic;
        `channels_last` (`layout_pair`, unless it runs NHWC); `foreach_updates`
        (`foreach_pair`). Changes BN statistics (a train-mode forward) and the weights: call
        after the measured steps."""
        return [*self._loss_pairs(batch), *self._layout_pair(batch), *foreach_pair(self)]

    def _layout_pair(self, batch: BatchLike) -> list[VariantPair]:
        images, trimmed = self._to_device(batch)
        targets = fit_rows(trimmed, self.target_rows)
        size = (images.shape[2], images.shape[3])

        def loss_of(net: nn.Module, x: Tensor) -> Tensor:
            with torch.autocast(self.device.type, torch.float16, enabled=self.amp_effective):
                return self.loss(net(x), targets, size)[0]

        return layout_pair(self.model, self.memory_format, images, loss_of)

    def _loss_pairs(self, batch: BatchLike) -> list[VariantPair]:
        trim = self.target_rows is not None
        vectorise = not self.loss.vectorised
        if not (trim or vectorise):
            return []
        images, trimmed = self._to_device(batch)
        rows = fit_rows(trimmed, self.target_rows)
        size = (images.shape[2], images.shape[3])
        autocast = torch.autocast(self.device.type, torch.float16, enabled=self.amp_effective)
        with autocast:  # with grad, as the step runs it: a compiled model keeps its graph
            leaves = _as_leaves(self.model(images))  # the model's own graph is dropped here

        def loss_pass(loss: YOLOv9Loss, targets: Tensor) -> Callable[[], object]:
            def run() -> object:
                total, _ = loss(leaves, targets, size)
                return torch.autograd.grad(total, [*leaves.main, *(leaves.aux or [])])

            return run

        as_run = loss_pass(self.loss, rows)
        pairs = []
        if trim:
            part = f"the loss, forward and backward, over {self.target_rows} target rows per image"
            pairs.append(VariantPair(TRIMMED_TARGETS, part, as_run, loss_pass(self.loss, trimmed)))
        if vectorise:
            vectorised = copy.copy(self.loss)  # shares the anchor grid; only the arithmetic differs
            vectorised.vectorised = True
            part = "the loss, forward and backward, with 1.6.0's assigner arithmetic"
            pairs.append(
                VariantPair(VECTORISED_ASSIGNER, part, as_run, loss_pass(vectorised, rows))
            )
        return pairs

    def _to_device(self, batch: BatchLike) -> tuple[Tensor, Tensor]:
        """The batch's images and its targets padded to its most crowded image, on the device."""
        images = batch.images.to(self.device, non_blocking=True, memory_format=self.memory_format)
        # Grouping rows needs the per-image maximum on the host: on the loader's CPU tensor
        # (the collate's, pinned), so the loss never waits for the device.
        padded = batch.padded_targets
        if padded is None:
            padded = pad_targets(batch.targets, images.shape[0])
        return images, padded.to(self.device, non_blocking=True)

    @property
    def lr(self) -> float:
        """The learning rate the next step uses."""
        return float(self.optimizer.param_groups[0]["lr"])

    def _apply_schedule(self) -> None:
        """Set lr and momentum for the next step (host floats only; no device work)."""
        if self.warmup_iters <= 0:
            return
        frac = min(self.iteration / self.warmup_iters, 1.0)
        start = min(WARMUP_LR_START, self.lr0)
        for group in self.optimizer.param_groups:
            group["lr"] = start + (self.lr0 - start) * frac
            if "momentum" in group:  # SGD's; Adam's betas stay
                group["momentum"] = WARMUP_MOMENTUM + (self.momentum - WARMUP_MOMENTUM) * frac
