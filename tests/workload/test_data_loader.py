"""The Batch contract of collate and the DataLoader built around YoloDataset."""

from __future__ import annotations

import pytest
import torch

from libreyolo.errors import UsageError
from libreyolo.workload.data.augment import AugmentConfig
from libreyolo.workload.data.dataset import Sample, YoloDataset
from libreyolo.workload.data.dataset_config import DatasetSpec, load_dataset_yaml
from libreyolo.workload.data.loader import (
    Batch,
    batches_available,
    build_loader,
    collate,
    pins_for,
)
from libreyolo.workload.data.synthetic import make_synthetic

IMGSZ = 64


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> DatasetSpec:
    root = tmp_path_factory.mktemp("synthetic")
    return load_dataset_yaml(make_synthetic(root, num_train=10, num_val=2, imgsz=96, seed=4))


def _sample(boxes: list[list[float]], classes: list[int], path: str) -> Sample:
    image = torch.full((3, 4, 4), 255, dtype=torch.uint8)
    return Sample(image, torch.tensor(boxes).view(-1, 4), torch.tensor(classes), path)


def test_collate_builds_exact_rows_without_padding() -> None:
    batch = collate(
        [
            _sample([[1, 2, 3, 4], [5, 6, 7, 8]], [2, 0], "a.jpg"),
            _sample([], [], "b.jpg"),
            _sample([[0, 0, 4, 4]], [1], "c.jpg"),
        ]
    )
    assert isinstance(batch, Batch)
    assert batch.images.dtype == torch.float32 and batch.images.shape == (3, 3, 4, 4)
    assert float(batch.images.max()) == 1.0
    assert batch.targets.dtype == torch.float32
    assert batch.targets.tolist() == [
        [0, 2, 1, 2, 3, 4],
        [0, 0, 5, 6, 7, 8],
        [2, 1, 0, 0, 4, 4],
    ]
    assert batch.paths == ["a.jpg", "b.jpg", "c.jpg"]


def test_collate_of_background_only_batch_has_zero_rows() -> None:
    batch = collate([_sample([], [], "a.jpg")])
    assert batch.targets.shape == (0, 6) and batch.targets.dtype == torch.float32


def test_loader_batches_follow_the_contract(spec: DatasetSpec) -> None:
    dataset = YoloDataset(spec, IMGSZ, AugmentConfig.none())
    loader = build_loader(dataset, batch=4, workers=0, shuffle=False)
    batches = list(loader)
    assert len(batches) == 2 == batches_available(spec, 4)  # 10 images, ragged last dropped
    first = batches[0]
    assert first.images.shape == (4, 3, IMGSZ, IMGSZ) and first.images.dtype == torch.float32
    assert float(first.images.min()) >= 0.0 and float(first.images.max()) <= 1.0
    expected = [dataset[i] for i in range(4)]
    assert first.targets.shape == (sum(len(s.boxes) for s in expected), 6)
    assert first.paths == [s.path for s in expected]
    for index, sample in enumerate(expected):
        rows = first.targets[first.targets[:, 0] == index]
        assert torch.equal(rows[:, 1].long(), sample.classes)
        assert torch.equal(rows[:, 2:], sample.boxes)
        assert torch.equal(first.images[index], sample.image.float() / 255)
    indices = first.targets[:, 0]
    assert bool((indices[1:] >= indices[:-1]).all())


def test_loader_with_two_persistent_workers_and_mosaic(spec: DatasetSpec) -> None:
    dataset = YoloDataset(spec, IMGSZ, AugmentConfig())
    loader = build_loader(dataset, batch=5, workers=2, seed=0)
    assert loader.persistent_workers and loader.drop_last
    for _epoch in range(2):
        batches = list(loader)
        assert len(batches) == 2
        for batch in batches:
            assert batch.images.shape == (5, 3, IMGSZ, IMGSZ)
            assert batch.targets.shape[1] == 6
            assert set(batch.targets[:, 0].long().tolist()) <= set(range(5))
            boxes = batch.targets[:, 2:]
            assert bool((boxes >= 0).all() and (boxes <= IMGSZ).all())
            assert bool((boxes[:, 2:] > boxes[:, :2]).all())


def test_loader_defaults(spec: DatasetSpec) -> None:
    dataset = YoloDataset(spec, IMGSZ, AugmentConfig.none())
    small = build_loader(dataset, batch=16, workers=0)
    assert not small.drop_last and len(list(small)) == 1  # smaller than one batch: keep it
    assert small.pin_memory is False  # the measured device is unknown: never pin
    assert not small.persistent_workers
    with pytest.raises(UsageError):
        build_loader(dataset, batch=0, workers=0)


def test_pinning_follows_the_measured_device(
    spec: DatasetSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A machine with CUDA measuring on its CPU: pinning would start a context on GPU 0.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    dataset = YoloDataset(spec, IMGSZ, AugmentConfig.none())
    on_cpu = build_loader(dataset, batch=4, workers=0, device=torch.device("cpu"))
    on_cuda = build_loader(dataset, batch=4, workers=0, device=torch.device("cuda", 1))
    assert on_cpu.pin_memory is False
    assert on_cuda.pin_memory is True
    assert pins_for(torch.device("cuda")) and not pins_for(torch.device("cpu"))
    assert not pins_for(None)


def test_batches_available(spec: DatasetSpec) -> None:
    assert batches_available(spec, 3) == 3
    assert batches_available(spec, 3, drop_last=False) == 4
    assert batches_available(spec, 16) == 1
    assert batches_available(list(range(7)), 2, drop_last=True) == 3
    with pytest.raises(UsageError):
        batches_available(spec, 0)
