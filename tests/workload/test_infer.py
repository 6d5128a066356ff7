"""The inference step: its phases, which images each call takes, and decoding inside the call."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from PIL import Image
from torch import Tensor, nn

from libreyolo.workload.infer import PHASES, InferStep

SIDE = 64  # square images at the input side: no letterbox padding, no resize


class SeeingModel(nn.Module):
    """Records the grey level of each image it is given; predicts nothing above any threshold."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[list[int]] = []

    def forward(self, x: Tensor) -> Tensor:
        self.seen.append([round(float(v) * 255) for v in x.mean(dim=(1, 2, 3))])
        return torch.zeros(x.shape[0], 4 + 3, 16)


def grey(level: int) -> Image.Image:
    return Image.new("RGB", (SIDE, SIDE), (level, level, level))


def test_a_call_runs_the_three_phases_in_order() -> None:
    seen: list[str] = []

    @contextmanager
    def record(name: str) -> Iterator[None]:
        seen.append(name)
        yield

    step = InferStep(SeeingModel(), [grey(10)], [Path("unused.jpg")], imgsz=SIDE)
    step.step(0, record)
    assert tuple(seen) == PHASES == ("preprocess", "forward", "postprocess")


def test_calls_take_consecutive_batches_wrapping_around_the_source() -> None:
    model = SeeingModel()
    images = [grey(10), grey(20), grey(30)]
    step = InferStep(model, images, [Path(f"{i}.jpg") for i in range(3)], imgsz=SIDE, batch=2)
    for iteration in range(3):
        step.step(iteration)
    assert model.seen == [[10, 20], [30, 10], [20, 30]]


def test_include_decode_reads_the_files_inside_the_call(tmp_path: Path) -> None:
    paths = [tmp_path / "a.png", tmp_path / "b.png"]
    grey(40).save(paths[0])
    grey(50).save(paths[1])
    model = SeeingModel()
    decoded_before = [grey(1), grey(2)]  # only their number counts with include_decode
    InferStep(model, decoded_before, paths, imgsz=SIDE, batch=2, include_decode=True).step(0)
    assert model.seen == [[40, 50]]


def test_half_is_cuda_only() -> None:
    step = InferStep(SeeingModel(), [grey(1)], [Path("x.jpg")], imgsz=SIDE, half=True)
    assert step.amp_effective is False
