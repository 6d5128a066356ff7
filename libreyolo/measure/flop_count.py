"""FLOPs per image of a model, counted with PyTorch's FLOP counter on storage-free tensors.

Role: copy the model onto the meta device (shapes and dtypes, no storage, no kernels run), run
one forward of a (batch, 3, imgsz, imgsz) input under `torch.utils.flop_counter.FlopCounterMode`
and, for training, the backward of every output into every trainable parameter; divide by the
batch. A model the meta device cannot run (an op with no meta kernel, a data-dependent branch)
is counted again on fake tensors, which run the same meta kernels behind a tensor subclass:
the same count, at 2.5x the cost (YOLOv9-t at 640: 0.16 s against 0.41 s, most of it building
a fake tensor per parameter). The real model is never run nor mutated (its BatchNorm
statistics, its cached grids), so counting before the window changes nothing the window
measures. The counter's convention is 2 FLOPs per multiply-add over convolutions, matmuls and
attention (`FLOP_CONVENTION`).

torch's convolution-backward formula counts a grouped convolution's weight gradient as if the
convolution were dense (`groups` times too many: 4.7x the forward for YOLOX-nano's depthwise
convolutions, against 3.0x for dense YOLOv9); `_convolution_backward_flop` divides that term by
`groups`.

Must not: time anything the window measures, run real tensors through the model, or decide
what a profile reports when counting fails (the caller notes it).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils import flop_counter
from torch.utils._pytree import tree_leaves


@dataclass(frozen=True, slots=True)
class FlopCount:
    """What one input of `batch` images costs, in FLOPs (2 per multiply-add)."""

    forward: int
    backward: int | None  # None: forward only (inference)
    batch: int
    imgsz: int
    count_ms: float

    def per_image(self, flops: int | None) -> float | None:
        return None if flops is None else flops / self.batch


def _convolution_backward_flop(
    grad_out_shape: list[int],
    x_shape: list[int],
    w_shape: list[int],
    bias: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    transposed: bool,
    output_padding: Any,
    groups: int,
    output_mask: list[bool],
    out_shape: Any,
    **kwargs: Any,
) -> int:
    """torch's `conv_backward_flop` (the input gradient as a transposed convolution of the
    output gradient, the weight gradient as a convolution of the input by it), with the
    weight-gradient term divided by `groups`: torch counts it as the dense convolution's."""

    def swap(shape: Any) -> list[int]:  # (N, C, ...) -> (C, N, ...)
        return [shape[1], shape[0], *shape[2:]]

    conv = flop_counter.conv_flop_count
    total = 0
    if output_mask[0]:
        total += conv(grad_out_shape, w_shape, list(out_shape[0]), not transposed)
    if output_mask[1]:
        weight_grad = list(out_shape[1])
        if transposed:
            dense = conv(swap(grad_out_shape), swap(x_shape), swap(weight_grad), False)
        else:
            dense = conv(swap(x_shape), swap(grad_out_shape), swap(weight_grad), False)
        total += dense // max(groups, 1)
    return total


def _counter() -> flop_counter.FlopCounterMode:
    mapping: dict[Any, Callable[..., int]] = {
        torch.ops.aten.convolution_backward: _convolution_backward_flop
    }
    return flop_counter.FlopCounterMode(display=False, custom_mapping=mapping)


def _input_dtype(model: nn.Module) -> torch.dtype:
    param = next(model.parameters(), None)
    return torch.float32 if param is None else param.dtype


def count_flops(model: nn.Module, *, batch: int, imgsz: int, training: bool) -> FlopCount:
    """The FLOPs of one (batch, 3, imgsz, imgsz) input: the forward in the model's current
    mode (eval for inference, train for training) and, with `training`, the backward of the
    sum of every output into every trainable parameter (the same gradient graph a real loss
    over those outputs walks). Raises whatever the model raises on fake tensors."""
    started = time.perf_counter()
    shape = (batch, 3, imgsz, imgsz)
    try:
        forward, backward = _count_on_meta(model, shape, training)
    except Exception:  # any op the meta device cannot run: count on fake tensors
        forward, backward = _count_on_fake(model, shape, training)
    return FlopCount(
        forward=forward,
        backward=backward,
        batch=batch,
        imgsz=imgsz,
        count_ms=round((time.perf_counter() - started) * 1000, 1),
    )


def _count_on_meta(
    model: nn.Module, shape: tuple[int, ...], training: bool
) -> tuple[int, int | None]:
    """(forward, backward or None) FLOPs of a copy of `model` on the meta device. The copy
    shares nothing with `model`: every parameter, buffer and tensor attribute (a cached grid)
    is a new meta tensor of its shape, put in the deepcopy's memo so that nothing is copied."""
    memo: dict[int, Any] = {}
    for module in model.modules():
        for value in vars(module).values():
            if isinstance(value, torch.Tensor):
                memo[id(value)] = torch.empty_like(value, device="meta")
        for param in module.parameters(recurse=False):
            memo[id(param)] = nn.Parameter(
                torch.empty_like(param, device="meta"), requires_grad=param.requires_grad
            )
        for buffer in module.buffers(recurse=False):
            memo[id(buffer)] = torch.empty_like(buffer, device="meta")
    meta = copy.deepcopy(model, memo)
    images = torch.empty(shape, dtype=_input_dtype(model), device="meta")
    return _count(meta, images, training)


def _count_on_fake(
    model: nn.Module, shape: tuple[int, ...], training: bool
) -> tuple[int, int | None]:
    """The same count on a fake-tensor copy of `model` (raises what the model raises)."""
    from torch._subclasses.fake_tensor import FakeCopyMode, FakeTensorMode

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with FakeCopyMode(mode):
        fake = copy.deepcopy(model)  # storage-free: a 400 MB model costs nothing here
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    with mode:
        images = torch.empty(shape, dtype=_input_dtype(model), device=device)
        return _count(fake, images, training)


def _count(copied: nn.Module, images: torch.Tensor, training: bool) -> tuple[int, int | None]:
    with _counter() as forward_counter, torch.set_grad_enabled(training):
        outputs = copied(images)
    backward = _backward_flops(copied, outputs) if training else None
    return int(forward_counter.get_total_flops()), backward


def _backward_flops(model: nn.Module, outputs: Any) -> int:
    leaves = [t for t in tree_leaves(outputs) if isinstance(t, torch.Tensor) and t.requires_grad]
    params = [p for p in model.parameters() if p.requires_grad]
    if not leaves or not params:
        raise ValueError("the training forward returned nothing a gradient flows from")
    total = torch.stack([leaf.float().sum() for leaf in leaves]).sum()
    with _counter() as counter:
        torch.autograd.grad(total, params, allow_unused=True)
    return int(counter.get_total_flops())
