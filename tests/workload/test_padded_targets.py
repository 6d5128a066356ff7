"""YOLOv9's dense targets are made in the collate (a loader worker), so the loader pins them with
the images and the step's copy is asynchronous; the step pads only a batch that lacks them."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data._utils.pin_memory import pin_memory

import libreyolo.workload.train as train_module
from libreyolo.workload.data.dataset import Sample
from libreyolo.workload.data.loader import Batch, collate
from libreyolo.workload.yolo9.family import WORKLOAD
from libreyolo.workload.yolo9.loss import pad_targets
from libreyolo.workload.yolo9.model import YOLOv9


def _samples() -> list[Sample]:
    image = torch.full((3, 64, 64), 128, dtype=torch.uint8)
    return [
        Sample(
            image, torch.tensor([[4.0, 4, 20, 20], [30, 30, 50, 60]]), torch.tensor([1, 2]), "a"
        ),
        Sample(image, torch.zeros(0, 4), torch.zeros(0, dtype=torch.long), "b"),
        Sample(image, torch.tensor([[8.0, 8, 40, 40]]), torch.tensor([0]), "c"),
    ]


def test_the_collate_pads_the_targets() -> None:
    batch = WORKLOAD.collate(_samples())
    assert batch.padded_targets is not None
    assert batch.padded_targets.shape == (3, 2, 5)
    torch.testing.assert_close(batch.padded_targets, pad_targets(batch.targets, 3))
    assert batch.padded_targets[1, :, 0].tolist() == [-1.0, -1.0]  # an image without boxes
    assert collate(_samples()).padded_targets is None  # the family-neutral contract: rows only


def test_the_padded_targets_are_pinned_with_the_images(monkeypatch: pytest.MonkeyPatch) -> None:
    pinned: list[tuple[int, ...]] = []

    def fake_pin(tensor: torch.Tensor, *args: object) -> torch.Tensor:
        pinned.append(tuple(tensor.shape))
        return tensor

    monkeypatch.setattr(torch.Tensor, "pin_memory", fake_pin)
    batch = pin_memory(WORKLOAD.collate(_samples()))  # what the loader's pin thread does
    assert isinstance(batch, Batch)
    assert (3, 2, 5) in pinned and (3, 3, 64, 64) in pinned


def test_the_step_uses_the_collates_targets(monkeypatch: pytest.MonkeyPatch) -> None:
    batch = WORKLOAD.collate(_samples())
    step = train_module.TrainStep(YOLOv9("t", 3, aux=True), ema=False)

    def no_padding(*args: object) -> torch.Tensor:
        raise AssertionError("the step padded targets the collate had padded")

    monkeypatch.setattr(train_module, "pad_targets", no_padding)
    losses = step.step(batch)
    assert torch.isfinite(torch.tensor(losses["total"]))


def test_the_probe_batch_comes_padded_too() -> None:
    batch = WORKLOAD.probe_batch(2, 64, 3, boxes_per_image=4)
    assert batch.padded_targets is not None and batch.padded_targets.shape == (2, 4, 5)
