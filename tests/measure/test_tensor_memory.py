"""Tensor memory by category over one training step: exact bytes on a model small enough to
count by hand, agreement with torch's MemTracker, a real YOLOv9-t step, and nothing left behind."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import pytest
import torch
from torch import nn
from torch.distributed._tools.mem_tracker import MemTracker
from torch.nn.modules import module as module_hooks
from torch.utils._python_dispatch import _get_current_dispatch_mode

from libreyolo.document.model import TENSOR_CATEGORIES
from libreyolo.document.phases import BACKWARD, FORWARD, OPTIMIZER, TO_DEVICE
from libreyolo.measure.tensor_memory import block_names, track_step
from tests.workload.test_train import make_step, synthetic_batch

FLOAT = 4


@contextmanager
def _untimed(_: str) -> Iterator[None]:
    yield


class Tiny(nn.Module):
    """conv -> bn -> relu (in the model's own forward) -> head."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(width)
        self.head = nn.Conv2d(width, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.bn(self.conv(x))))


class Runner:
    """The shape of our trainers: `model`, `optimizer`, and `step(batch, phases)`."""

    def __init__(self, model: nn.Module) -> None:
        torch.manual_seed(0)
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step(
        self,
        batch: tuple[torch.Tensor],
        phases: Callable[[str], AbstractContextManager[None]] = _untimed,
    ) -> dict[str, torch.Tensor]:
        with phases(TO_DEVICE):
            images = batch[0]
        with phases(FORWARD):
            loss = self.model(images).square().mean()
        with phases(BACKWARD):
            loss.backward()
        with phases(OPTIMIZER):
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        return {"total": loss.detach()}


def _warm(model: nn.Module, side: int = 16) -> tuple[Runner, tuple[torch.Tensor]]:
    """A runner after one step (the optimizer's momentum exists, as after a window)."""
    runner, batch = Runner(model), (torch.rand(2, 3, side, side),)
    runner.step(batch)
    return runner, batch


def test_a_small_step_is_counted_to_the_byte() -> None:
    runner, batch = _warm(Tiny())
    tracked = track_step(runner, batch, imgsz=16, num_images=2)
    params = sum(p.nbytes for p in runner.model.parameters())
    assert list(tracked.categories) == list(TENSOR_CATEGORIES)
    assert tracked.categories["params"] == params == (8 * 3 * 9 + 8 + 8 + 4 * 8 + 4) * FLOAT
    assert tracked.categories["optimizer"] == params  # SGD's momentum: one buffer a weight
    assert tracked.categories["buffers"] == 2 * 8 * FLOAT + 8  # running mean, var; int64 count
    assert tracked.categories["inputs"] == batch[0].nbytes
    assert tracked.categories["ema"] == 0
    assert sum(tracked.categories.values()) == tracked.peak_bytes
    # Alive at the peak, each kept for the backward: conv's output (bn's input), relu's (the
    # model's own op: the head's input), the head's (square's input), bn's saved statistics,
    # and the loss itself.
    blocks = {b.name: b.bytes for b in tracked.top_blocks}
    image = 2 * 16 * 16 * FLOAT
    assert blocks == {"conv": 8 * image, "(model)": 8 * image, "head": 4 * image} | {
        "bn": 2 * 8 * FLOAT,
        "(loss)": FLOAT,
    }
    assert tracked.categories["activations"] == sum(blocks.values())
    assert tracked.phase_at_peak == BACKWARD
    assert (tracked.batch, tracked.imgsz) == (2, 16)
    assert tracked.track_ms > 0


def test_the_categories_agree_with_torchs_memtracker() -> None:
    """MemTracker's categories on the same step: parameters with buffers, optimizer state,
    and the whole peak (MemTracker does not see the batch, made before it)."""
    runner, batch = _warm(Tiny(width=32), side=32)
    tracker = MemTracker()
    tracker.track_external(runner.model, runner.optimizer)
    with tracker:
        runner.step(batch)
    theirs = {
        str(k.value if hasattr(k, "value") else k): v
        for k, v in next(iter(tracker.get_tracker_snapshot("peak").values())).items()
    }
    ours = track_step(runner, batch, imgsz=32, num_images=2).categories
    assert ours["params"] + ours["buffers"] == theirs["Parameter"] + theirs["Buffer"]
    assert ours["optimizer"] == theirs["Optstate"]
    ours_peak = sum(ours.values()) - ours["inputs"]
    assert ours_peak == pytest.approx(theirs["Total"], rel=0.05)


def test_a_yolo9t_step_splits_into_its_weights_state_and_activations() -> None:
    step = make_step()
    batch = synthetic_batch(2, 64, seed=0)
    step.step(batch)
    tracked = track_step(step, batch, imgsz=64, num_images=2)
    params = sum(p.nbytes for p in step.model.parameters())
    ema = step.ema.module if step.ema is not None else None
    assert ema is not None
    assert tracked.categories["params"] == params
    assert tracked.categories["ema"] == sum(t.nbytes for t in [*ema.parameters(), *ema.buffers()])
    assert tracked.categories["optimizer"] == params  # momentum, one buffer a weight
    assert sum(tracked.categories.values()) == tracked.peak_bytes
    assert tracked.categories["activations"] > 0
    top = [b.name for b in tracked.top_blocks]
    assert top and all(
        name in {"(loss)", "(model)"}
        or name.split(".")[0] in {"backbone", "neck", "head", "aux", "aux_head"}
        for name in top
    ), top


def test_tracking_leaves_no_hook_or_mode_behind() -> None:
    runner, batch = _warm(Tiny())
    pre, post = len(module_hooks._global_forward_pre_hooks), len(module_hooks._global_forward_hooks)
    track_step(runner, batch, imgsz=16, num_images=2)
    assert _get_current_dispatch_mode() is None
    assert len(module_hooks._global_forward_pre_hooks) == pre
    assert len(module_hooks._global_forward_hooks) == post
    assert all(not p._post_accumulate_grad_hooks for p in runner.model.parameters())


def test_a_step_that_fails_removes_its_hooks_and_raises() -> None:
    runner, batch = _warm(Tiny())

    def broken(*_: object) -> dict[str, torch.Tensor]:
        raise RuntimeError("out of memory")

    runner.step = broken  # type: ignore[method-assign]
    pre = len(module_hooks._global_forward_pre_hooks)
    with pytest.raises(RuntimeError, match="out of memory"):
        track_step(runner, batch, imgsz=16, num_images=2)
    assert _get_current_dispatch_mode() is None
    assert len(module_hooks._global_forward_pre_hooks) == pre
    assert all(not p._post_accumulate_grad_hooks for p in runner.model.parameters())


def test_blocks_are_names_cut_to_two_parts_and_the_model_itself() -> None:
    model = nn.Sequential(nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU())))
    names = set(block_names(model).values())
    assert names == {"(model)", "0", "0.0", "0.1"}


def test_a_probe_out_of_memory_leaves_no_prediction_and_the_step_tracked() -> None:
    runner, batch = _warm(Tiny())
    step = runner.step

    def tight(images: tuple[torch.Tensor], *rest: object) -> dict[str, torch.Tensor]:
        if images[0].shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory")
        return step(images, *rest)  # type: ignore[arg-type]

    runner.step = tight  # type: ignore[method-assign]
    probes = [(1, (batch[0][:1],)), (3, (torch.rand(3, 3, 16, 16),))]
    tracked = track_step(runner, batch, imgsz=16, num_images=2, probes=probes)
    assert tracked.probes == [] and tracked.peak_bytes > 0
    assert _get_current_dispatch_mode() is None
    assert all(not p._post_accumulate_grad_hooks for p in runner.model.parameters())
