"""Tensor memory by category over one training step, taken after the window.

Role: run one more step of the run's own trainer (never inside the window) under a
TorchDispatchMode that sees every tensor the step creates, and keep the live bytes of each
storage by category: the model's parameters and buffers, its gradients, the optimizer's state,
the EMA copy, the batch (inputs), what the forward creates (activations: what autograd keeps for
the backward, and the loss's), and what the backward and the optimizer create besides gradients
(temporaries). At the step's peak the categories and the activations by model block are kept.

This is torch's MemTracker's bookkeeping (the same categories, checked against it in the tests)
without its per-module snapshots: those copy every active module's state on each op and made a
YOLOv9-t step 40 s on the CPU; this costs about one more step. Storages are told apart by
their Python object (torch preserves it while the storage lives) and forgotten in a weakref
callback as they are freed; a resize outside the dispatcher and a backend's private workspace
are not seen, so the peak is of tensors, not of the process (peak RSS and the CUDA allocator's
peaks are the process's own figures).

Must not: run inside the window, keep a tensor alive, change what the step computes, or print.
"""

from __future__ import annotations

import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from libreyolo.document.model import TENSOR_CATEGORIES, BlockMemory, PeakPoint, TensorMemory
from libreyolo.document.phases import BACKWARD, FORWARD, TO_DEVICE

PARAMS, BUFFERS, GRADS, OPTIMIZER, EMA = "params", "buffers", "grads", "optimizer", "ema"
INPUTS, ACTIVATIONS, TEMPORARIES = "inputs", "activations", "temporaries"
# The category of a storage the step creates, by the phase it is created in.
_CREATED_IN = {TO_DEVICE: INPUTS, FORWARD: ACTIVATIONS, BACKWARD: TEMPORARIES}
# Activations made outside any module of the model (the loss's), and by the model's own
# forward between its blocks.
LOSS_BLOCK, MODEL_BLOCK = "(loss)", "(model)"
TOP_BLOCKS = 10


class _Ledger(TorchDispatchMode):
    """Live bytes by category and by block, and their split at the highest total."""

    def __init__(self, block_of: dict[int, str]) -> None:
        super().__init__()
        self.phase: str = TO_DEVICE
        self._block_of = block_of  # id(module) -> block name, for the trained model's modules
        self._blocks: list[str] = []  # the blocks whose forward is running, innermost last
        self._live: dict[int, tuple[int, str, str | None]] = {}  # id(storage) -> bytes, cat, block
        self._refs: dict[int, weakref.ref[torch.UntypedStorage]] = {}
        self.by_category: Counter[str] = Counter()
        self.by_block: Counter[str] = Counter()
        self.total_bytes = 0
        self.peak_bytes = 0
        self.peak_categories: dict[str, int] = {}
        self.peak_blocks: dict[str, int] = {}
        self.peak_phase = self.phase
        self.phase_peaks: dict[str, int] = {}  # the highest total reached in each phase

    def add(self, tensor: torch.Tensor, category: str, block: str | None = None) -> None:
        """Count `tensor`'s storage under `category` unless it is counted already."""
        storage = tensor.untyped_storage()
        key = id(storage)
        if key in self._live:
            return
        size = storage.nbytes()
        self._live[key] = (size, category, block)
        self._refs[key] = weakref.ref(storage, self._on_free(key))
        self._move(size, category, block, +1)

    def recount(self, tensor: torch.Tensor, category: str) -> None:
        """Count `tensor`'s storage under `category` from now on (a gradient the backward made)."""
        key = id(tensor.untyped_storage())
        entry = self._live.get(key)
        if entry is None:
            self.add(tensor, category)
            return
        size, old, block = entry
        self._move(size, old, block, -1)
        self._live[key] = (size, category, None)
        self._move(size, category, None, +1)

    def _on_free(self, key: int) -> Callable[[object], None]:
        return lambda _: self._forget(key)

    def _forget(self, key: int) -> None:
        self._refs.pop(key, None)
        entry = self._live.pop(key, None)
        if entry is not None:
            self._move(*entry, -1)

    def _move(self, size: int, category: str, block: str | None, sign: int) -> None:
        self.by_category[category] += sign * size
        if block is not None:
            self.by_block[block] += sign * size
        self.total_bytes += sign * size
        if self.total_bytes > self.phase_peaks.get(self.phase, 0):
            self.phase_peaks[self.phase] = self.total_bytes
        if self.total_bytes > self.peak_bytes:
            self.peak_bytes = self.total_bytes
            self.peak_categories = dict(self.by_category)
            self.peak_blocks = dict(self.by_block)
            self.peak_phase = self.phase

    def enter_module(self, module: nn.Module) -> None:
        block = self._block_of.get(id(module))
        if block is not None:
            self._blocks.append(block)

    def leave_module(self, module: nn.Module) -> None:
        if id(module) in self._block_of and self._blocks:
            self._blocks.pop()

    def __torch_dispatch__(
        self,
        func: Callable[..., Any],
        types: object,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        category = _CREATED_IN.get(self.phase, TEMPORARIES)
        block = None
        if category == ACTIVATIONS:
            block = self._blocks[-1] if self._blocks else LOSS_BLOCK
        for leaf in pytree.tree_leaves(out):
            if isinstance(leaf, torch.Tensor):
                self.add(leaf, category, block)
        return out


def block_names(model: nn.Module, depth: int = 2) -> dict[int, str]:
    """id(module) -> its block: its name cut to `depth` parts ("backbone.elan1"), or
    MODEL_BLOCK for the model itself (the ops of its own forward, between its children)."""
    return {
        id(module): ".".join(name.split(".")[:depth]) if name else MODEL_BLOCK
        for name, module in model.named_modules()
    }


@contextmanager
def _module_hooks(ledger: _Ledger) -> Iterator[None]:
    """Which block of the model is running, from global forward hooks (removed on exit)."""
    from torch.nn.modules import module as module_hooks

    pre = module_hooks.register_module_forward_pre_hook(lambda m, _: ledger.enter_module(m))
    post = module_hooks.register_module_forward_hook(lambda m, _i, _o: ledger.leave_module(m))
    try:
        yield
    finally:
        pre.remove()
        post.remove()


def _state_tensors(optimizer: torch.optim.Optimizer | None) -> Iterable[torch.Tensor]:
    if optimizer is None:
        return
    for state in optimizer.state.values():
        yield from (v for v in state.values() if isinstance(v, torch.Tensor))


def _batch_tensors(batch: object) -> list[torch.Tensor]:
    """The tensors a collated batch holds (a dataclass's fields or a tuple's items)."""
    values: Iterable[object] = batch if isinstance(batch, tuple | list) else ()
    if hasattr(batch, "__dict__"):
        values = vars(batch).values()
    return [value for value in values if isinstance(value, torch.Tensor)]


def probe_batches(batch: int) -> tuple[int, ...]:
    """The two smaller batches whose steps the prediction's lines go through: a quarter and a
    half of `batch` (1 and 2 under 4, and for batch 1, where 2 is the only second point: a
    probe that runs out of memory is dropped, `track_step`)."""
    return (max(1, batch // 4), max(2, batch // 2))


def track_step(
    trainer: Any,
    batch: object,
    *,
    imgsz: int,
    num_images: int,
    probes: Sequence[tuple[int, object]] = (),
) -> TensorMemory:
    """One step of `trainer` (a `TrainRunner` with `model`, `optimizer` and an optional
    `ema.module`) on `batch`, its tensor memory by category at the peak; before it, one step
    on each of `probes` ((images, batch) pairs, smaller batches), whose peaks in each phase
    are the points the prediction's lines go through. Each step updates the weights like any
    other: call it after the window."""
    started = time.perf_counter()
    try:
        points = [PeakPoint(batch=n, phase_peak_bytes=phase_peaks(trainer, b)) for n, b in probes]
    except torch.OutOfMemoryError:  # a probe above a batch sized to the device: no prediction
        points = []
    ledger = _track(trainer, batch)
    track_ms = (time.perf_counter() - started) * 1e3
    return _summary(ledger, imgsz=imgsz, num_images=num_images, track_ms=track_ms, probes=points)


def phase_peaks(trainer: Any, batch: object) -> dict[str, int]:
    """The tensors' peak in each phase of one step of `trainer` on `batch` (it updates the
    weights like any other step)."""
    return dict(_track(trainer, batch).phase_peaks)


def _track(trainer: Any, batch: object) -> _Ledger:
    """One step of `trainer` on `batch` under a ledger, which it returns."""
    model: nn.Module = trainer.model
    optimizer = getattr(trainer, "optimizer", None)
    ema = getattr(getattr(trainer, "ema", None), "module", None)
    ledger = _Ledger(block_names(model))
    for p in model.parameters():
        ledger.add(p, PARAMS)
        if p.grad is not None:
            ledger.add(p.grad, GRADS)
    for b in model.buffers():
        ledger.add(b, BUFFERS)
    for t in _state_tensors(optimizer):
        ledger.add(t, OPTIMIZER)
    if ema is not None:
        for t in [*ema.parameters(), *ema.buffers()]:
            ledger.add(t, EMA)
    for t in _batch_tensors(batch):
        ledger.add(t, INPUTS)
    hooks = [
        p.register_post_accumulate_grad_hook(lambda q: ledger.recount(q.grad, GRADS))
        for p in model.parameters()
        if p.requires_grad
    ]

    @contextmanager
    def phases(name: str) -> Iterator[None]:
        ledger.phase = name
        yield

    try:
        with _module_hooks(ledger), ledger:
            trainer.step(batch, phases)["total"]
    finally:
        for hook in hooks:
            hook.remove()
    return ledger


def _summary(
    ledger: _Ledger,
    *,
    imgsz: int,
    num_images: int,
    track_ms: float,
    probes: list[PeakPoint],
) -> TensorMemory:
    categories = {
        name: max(int(ledger.peak_categories.get(name, 0)), 0) for name in TENSOR_CATEGORIES
    }
    blocks = sorted(
        ((size, name) for name, size in ledger.peak_blocks.items() if size > 0), reverse=True
    )
    return TensorMemory(
        peak_bytes=int(ledger.peak_bytes),
        categories=categories,
        phase_at_peak=ledger.peak_phase,
        top_blocks=[BlockMemory(name=name, bytes=size) for size, name in blocks[:TOP_BLOCKS]],
        batch=num_images,
        imgsz=imgsz,
        track_ms=round(track_ms, 1),
        phase_peak_bytes=dict(ledger.phase_peaks),
        probes=probes,
    )
