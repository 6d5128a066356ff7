"""The FLOP counter on a model small enough to count by hand: the forward is 2 FLOPs per
multiply-add exactly, the backward the input and weight gradients (a depthwise weight gradient
counted once, not `groups` times; no input gradient for the image), the real model is left
exactly as it was, a forward the meta device cannot run is counted on fake tensors, and one
that cannot run on fake tensors either is a note, not a failure."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils.flop_counter import FlopCounterMode

from libreyolo.measure import flop_count
from libreyolo.measure.compute import count_model_flops
from libreyolo.measure.flop_count import count_flops

C, WIDE, CLASSES = 8, 16, 10  # the stem's channels, the 1x1's, the linear's outputs
S, BATCH = 16, 2  # input side (the convolutions keep it: stride 1, "same" padding), images


class Tiny(nn.Module):
    """A 3x3 convolution, a depthwise 3x3 (groups=C), a 1x1 and a linear, with BatchNorm and a
    grid cached on the module in the forward (as the YOLO heads cache their anchors)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, C, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(C)
        self.depthwise = nn.Conv2d(C, C, 3, padding=1, groups=C, bias=False)
        self.pointwise = nn.Conv2d(C, WIDE, 1)
        self.fc = nn.Linear(WIDE, CLASSES)
        self.grid: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pointwise(self.depthwise(torch.relu(self.bn(self.stem(x)))))
        if self.grid is None or self.grid.shape[0] != x.shape[-1]:
            self.grid = torch.arange(x.shape[-1], device=x.device)
        return self.fc(x.mean((2, 3)))


# Multiply-adds of one image, layer by layer.
STEM = S * S * C * 3 * 9
DEPTHWISE = S * S * C * 1 * 9  # each output channel sees one input channel
POINTWISE = S * S * WIDE * C
LINEAR = WIDE * CLASSES
FORWARD = 2 * (STEM + DEPTHWISE + POINTWISE + LINEAR)
# Input gradient of every layer but the stem (the image needs none), weight gradient of all.
BACKWARD = 2 * ((DEPTHWISE + POINTWISE + LINEAR) + (STEM + DEPTHWISE + POINTWISE + LINEAR))


def _model(training: bool) -> Tiny:
    torch.manual_seed(0)
    model = Tiny()
    model(torch.randn(BATCH, 3, S, S))  # running statistics that are not the initial ones
    return model.train(training)


def test_the_forward_is_two_flops_per_multiply_add() -> None:
    count = count_flops(_model(False), batch=BATCH, imgsz=S, training=False)
    assert count.forward == BATCH * FORWARD
    assert count.backward is None
    assert count.per_image(count.forward) == FORWARD
    assert count.count_ms > 0


def test_the_backward_counts_each_gradient_once() -> None:
    count = count_flops(_model(True), batch=BATCH, imgsz=S, training=True)
    assert count.forward == BATCH * FORWARD
    assert count.backward == BATCH * BACKWARD


def test_torch_alone_counts_the_depthwise_weight_gradient_groups_times() -> None:
    """What `_convolution_backward_flop` corrects: torch's formula, on the same model."""
    model = _model(True)
    loss = model(torch.randn(BATCH, 3, S, S)).sum()
    with FlopCounterMode(display=False) as counter:
        loss.backward()
    overcount = BATCH * 2 * DEPTHWISE * (C - 1)
    assert counter.get_total_flops() == BATCH * BACKWARD + overcount


def test_count_model_flops_gives_per_image_figures() -> None:
    notes: list[str] = []
    flops = count_model_flops(_model(True), batch=BATCH, imgsz=S, training=True, notes=notes)
    assert flops is not None
    assert (flops.forward_per_image, flops.backward_per_image) == (FORWARD, BACKWARD)
    assert flops.per_image == FORWARD + BACKWARD
    assert (flops.batch, flops.imgsz) == (BATCH, S)
    assert notes == []
    inference = count_model_flops(_model(False), batch=1, imgsz=S, training=False, notes=notes)
    assert inference is not None
    assert (inference.per_image, inference.backward_per_image) == (FORWARD, None)


def _values(value: object) -> Iterator[object]:
    """`value` and everything a container of it holds, recursively."""
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _values(item)
    elif isinstance(value, list | tuple | set):
        for item in value:
            yield from _values(item)


@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
def test_counting_leaves_the_real_model_untouched(training: bool) -> None:
    model = _model(training)
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    modes = [module.training for module in model.modules()]
    count_flops(model, batch=BATCH, imgsz=S + 8, training=training)  # another grid side
    after = model.state_dict()
    assert list(after) == list(before)
    for name, tensor in before.items():  # BatchNorm's running statistics and step count too
        assert torch.equal(after[name], tensor), name
        assert not isinstance(after[name], FakeTensor), name
    assert all(p.grad is None for p in model.parameters())
    assert [module.training for module in model.modules()] == modes
    for module in model.modules():
        copies = [
            v
            for v in _values(vars(module))
            if isinstance(v, FakeTensor) or (isinstance(v, torch.Tensor) and v.is_meta)
        ]
        assert copies == [], type(module).__name__
    assert model.grid is not None and model.grid.shape == (S,)  # the real forward's, kept
    assert not model.grid.is_meta


def test_the_count_runs_on_the_meta_device(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fake(*args: object) -> None:
        raise AssertionError("counted on fake tensors")

    monkeypatch.setattr(flop_count, "_count_on_fake", no_fake)
    count = count_flops(_model(True), batch=BATCH, imgsz=S, training=True)
    assert (count.forward, count.backward) == (BATCH * FORWARD, BATCH * BACKWARD)


class AddsAHostTensor(Tiny):
    """Makes a CPU tensor in its forward: the meta copy cannot add it, a fake copy can."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x + torch.zeros(1, 1, 1, 1))


@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
def test_a_forward_the_meta_device_cannot_run_is_counted_on_fake_tensors(training: bool) -> None:
    torch.manual_seed(0)
    model = AddsAHostTensor().train(training)
    with pytest.raises(RuntimeError):
        flop_count._count_on_meta(model, (BATCH, 3, S, S), training)
    count = count_flops(model, batch=BATCH, imgsz=S, training=training)
    assert count.forward == BATCH * FORWARD
    assert count.backward == (BATCH * BACKWARD if training else None)


class ReadsAValue(nn.Module):
    """A forward that needs a tensor's value, which a fake tensor does not have."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.how = how

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        if self.how == "item":
            return y * (y.max().item() > 0)
        return y[:, : int(y.flatten()[:1].tolist()[0] > 0) + 1]


@pytest.mark.parametrize("how", ["item", "tolist"])
def test_a_forward_that_needs_values_is_not_counted_and_says_so(how: str) -> None:
    model = ReadsAValue(how).eval()
    model(torch.randn(1, 3, S, S))  # it runs on real tensors
    notes = ["earlier note"]
    assert count_model_flops(model, batch=1, imgsz=S, training=False, notes=notes) is None
    assert len(notes) == 2
    assert notes[1].startswith("FLOPs not counted: ")
    assert "\n" not in notes[1]
    assert all(p.grad is None for p in model.parameters())
