"""AutoBatch: the fit of a line through (batch, peak bytes) probes against the memory free to
this run, the dataset's caps, the probe step itself, and what is freed after the probes. A fake
device stands in for CUDA: its peak grows as a + b x batch and it runs out at a chosen batch."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from libreyolo.config.schema import ProfileConfig
from libreyolo.errors import NoProfileError, ProfileError
from libreyolo.measure import train
from libreyolo.measure.autobatch import (
    MAX_BATCH,
    MOSAIC_TILES,
    TARGET_SHARE,
    BatchCap,
    autobatch,
    data_limits,
    epoch_cap,
    fit_batch,
    synthetic_cap,
)
from libreyolo.measure.window import plan_window
from libreyolo.workload.data import synthetic
from libreyolo.workload.data.dataset import max_label_rows
from libreyolo.workload.data.loader import batches_available
from libreyolo.workload.family import TrainOptions
from libreyolo.workload.train_keys import resolve
from tests.configs import configured

GB = 1_000_000_000
NO_CAP = BatchCap(MAX_BATCH, "no cap")


class FakeDevice:
    """DeviceMemory whose step peaks at `base + per_image * batch`, OOM from `oom_at` on."""

    def __init__(
        self,
        *,
        free: int = 100 * GB,
        total: int = 100 * GB,
        reserved: int = 0,
        base: int = 1 * GB,
        per_image: int = GB // 2,
        oom_at: int | None = None,
    ) -> None:
        self.free, self.total, self.reserved = free, total, reserved
        self.base, self.per_image, self.oom_at = base, per_image, oom_at
        self.peak = 0
        self.events: list[str] = []

    def step(self, batch: int) -> None:
        self.events.append(f"step {batch}")
        if self.oom_at is not None and batch >= self.oom_at:
            raise torch.cuda.OutOfMemoryError(f"fake OOM at batch {batch}")
        self.peak = self.base + self.per_image * batch

    def free_and_total_bytes(self) -> tuple[int, int]:
        return self.free, self.total

    def reserved_bytes(self) -> int:
        return self.reserved

    def reset_peak(self) -> None:
        self.peak = 0

    def peak_allocated_bytes(self) -> int:
        return self.peak

    def empty_cache(self) -> None:
        self.events.append("empty_cache")

    def synchronize(self) -> None:
        pass

    def steps(self) -> list[int]:
        return [int(e.split()[1]) for e in self.events if e.startswith("step")]


def _run(fake: FakeDevice, cap: BatchCap = NO_CAP) -> tuple[int, str]:
    return autobatch(lambda: fake.step, fake, cap)


def test_fit_solves_the_line_for_the_target_share() -> None:
    points = [(1, 1 * GB + 200_000_000), (2, 1 * GB + 400_000_000), (4, 1 * GB + 800_000_000)]
    # 0.2 GB per image over a 1 GB base: 0.7 x 10 GB = 7 GB fits (7 - 1) / 0.2 = 30 images
    assert TARGET_SHARE == 0.70
    assert fit_batch(points, 10 * GB) == 30


def test_fit_never_returns_less_than_one_or_more_than_the_cap() -> None:
    assert fit_batch([(1, 9 * GB), (2, 18 * GB)], 10 * GB) == 1
    assert fit_batch([(1, 1000), (2, 1001)], 10 * GB) == MAX_BATCH


def test_fit_with_flat_or_single_points_keeps_what_ran() -> None:
    assert fit_batch([(1, GB), (2, GB), (4, GB)], 10 * GB) == 4
    assert fit_batch([(8, GB)], 10 * GB) == 8
    assert fit_batch([], 10 * GB) == 1


def test_the_budget_is_the_memory_free_to_this_process_not_the_device() -> None:
    # 30 GB free + 10 GB our cache of a 100 GB device: 0.7 x 40 = 28 GB fits (28 - 1) / 0.5
    batch, note = _run(FakeDevice(free=30 * GB, reserved=10 * GB, total=100 * GB))
    assert batch == 54  # against the total it would be (70 - 1) / 0.5 = 138
    assert "40.0 GB available" in note and "30.0 GB free of 100.0 GB total" in note


def test_an_oom_stops_probing_and_the_points_below_still_fit() -> None:
    fake = FakeDevice(free=20 * GB, total=20 * GB, oom_at=8)
    batch, note = _run(fake)
    assert fake.steps() == [1, 2, 4, 8]  # 16 is never tried
    assert batch == 26  # (0.7 x 20 - 1) / 0.5 from the points 1, 2 and 4
    assert "probes 1: 1500 MB, 2: 2000 MB, 4: 3000 MB" in note


def test_a_probe_past_90_percent_stops_probing() -> None:
    fake = FakeDevice(free=10 * GB, total=10 * GB, base=GB // 2, per_image=2_200_000_000)
    batch, _ = _run(fake)
    assert fake.steps() == [1, 2, 4]  # batch 4 peaks at 9.3 GB, past 90 % of 10 GB
    assert batch == 2  # (7 - 0.5) / 2.2


def test_an_oom_at_batch_one_says_the_model_does_not_fit() -> None:
    with pytest.raises(NoProfileError, match="does not fit even one image"):
        _run(FakeDevice(oom_at=1))


def test_after_an_oom_the_probe_model_is_gone_and_the_cache_emptied() -> None:
    fake = FakeDevice(oom_at=4)
    refs: list[weakref.ref[nn.Module]] = []

    def make_step() -> Callable[[int], object]:
        model = nn.Linear(2, 2)
        model.self_ref = model  # a cycle, as modules may hold
        refs.append(weakref.ref(model))

        def step(batch: int) -> nn.Module:
            fake.step(batch)
            return model

        return step

    autobatch(make_step, fake, NO_CAP)
    assert refs[0]() is None
    assert fake.events[-2:] == ["step 4", "empty_cache"]


def test_the_dataset_cap_binds_and_says_so() -> None:
    fake = FakeDevice()
    batch, note = _run(fake, epoch_cap(128, 20))
    assert batch == 6
    assert "capped at 6 so the 20 measured steps fit one epoch of 128 images" in note
    assert "memory fits 138" in note
    assert fake.steps() == [1, 2, 4]  # no probe larger than the cap


@pytest.mark.parametrize(("images", "measured"), [(128, 20), (120, 20), (64, 3), (21, 20), (7, 8)])
def test_the_epoch_cap_follows_the_loaders_drop_last_rule(images: int, measured: int) -> None:
    cap = epoch_cap(images, measured).max_batch
    assert cap >= 1
    if images >= measured:
        assert batches_available(range(images), cap) >= measured
        assert batches_available(range(images), cap + 1) < measured


def test_the_synthetic_set_is_capped_and_the_batch_with_it() -> None:
    plan = plan_window(5, 20, measured_flag="--steps")
    limits = data_limits("synthetic", plan)
    assert synthetic.MAX_TRAIN_IMAGES == 4096
    assert limits.cap == synthetic_cap(plan.num_total, synthetic.MAX_TRAIN_IMAGES)
    assert limits.cap.max_batch == 4096 // plan.num_total
    assert synthetic.train_images_for(plan.num_total, limits.cap.max_batch) <= 4096
    assert limits.boxes_per_image == MOSAIC_TILES * synthetic.MAX_BOXES_PER_IMAGE
    assert limits.names == synthetic.CLASS_NAMES
    _, note = _run(FakeDevice(), limits.cap)
    assert f"fit the largest synthetic set ({synthetic.MAX_TRAIN_IMAGES} images)" in note


def _yolo_set(root: Path, rows_per_file: list[int]) -> Path:
    (root / "images").mkdir(parents=True)
    (root / "labels").mkdir()
    for i, rows in enumerate(rows_per_file):
        (root / "images" / f"{i}.jpg").write_bytes(b"")
        (root / "labels" / f"{i}.txt").write_text("0 0.5 0.5 0.1 0.1\n\n" * rows)
    yaml = root / "data.yaml"
    yaml.write_text("path: .\ntrain: images\nval: images\nnames:\n  0: a\n  1: b\n")
    return yaml


def test_max_label_rows_counts_non_blank_rows(tmp_path: Path) -> None:
    yaml = _yolo_set(tmp_path / "set", [1, 3, 0])
    labels = sorted((yaml.parent / "labels").iterdir())
    assert max_label_rows([*labels, tmp_path / "missing.txt"]) == 3


class FakeWorkload:
    """Records how the probe built and stepped its model."""

    name = "yolo9"  # the family whose 1.6.0 training keys the probe resolves

    def __init__(self, fake: FakeDevice) -> None:
        self.fake = fake
        self.calls: dict[str, Any] = {}

    def describe(self, model: nn.Module) -> Any:
        return type("D", (), {"nc": 80})()

    def reset_classes(self, model: nn.Module, nc: int, names: dict[int, str]) -> None:
        self.calls["reset_classes"] = (nc, names)

    def train_step(
        self,
        model: nn.Module,
        *,
        device: torch.device,
        amp: bool,
        ema: bool,
        channels_last: bool,
        options: Any,
    ) -> Any:
        self.calls["train_step"] = {
            "amp": amp,
            "ema": ema,
            "channels_last": channels_last,
            "options": options,
        }
        fake = self.fake

        class Step:
            def step(self, batch: tuple[int, int]) -> None:
                fake.step(batch[0])

        return Step()

    def probe_batch(self, batch: int, imgsz: int, nc: int, *, boxes_per_image: int) -> Any:
        self.calls.setdefault("probe_batch", []).append((batch, imgsz, nc, boxes_per_image))
        return batch, boxes_per_image


def test_the_probe_is_the_measured_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    yaml = _yolo_set(tmp_path / "set", [1, 3, 2] * 20)  # 60 images, densest label file 3 rows
    fake = FakeDevice()
    workload = FakeWorkload(fake)
    loads: list[tuple[Any, ...]] = []

    def load(weights: str, size: str | None, device: Any, notes: list[str], family: str) -> Any:
        loads.append((weights, size, family))
        return workload, nn.Linear(1, 1)

    monkeypatch.setattr("libreyolo.workload.api.load_workload_model", load)
    settings = configured(
        "run",
        {"dataset.name_or_path": str(yaml), "model.weights": "w.pt", "model.size": "s"}
        | {"batch": -1, "amp": True, "max_labels": 100},
    )
    plan = plan_window(2, 4, measured_flag="--steps")
    fitted, note = train._fit_batch(settings, torch.device("cpu"), plan, fake)
    assert loads == [("w.pt", "s", settings.model.family)]  # the measured run's own load
    # the probes run the measured step: its target rows too (memory grows with them)
    assert workload.calls["train_step"] == {
        "amp": True,
        "ema": True,
        "channels_last": False,  # 1.6.0's NCHW, as the run's step
        "options": TrainOptions(max_labels=100, keys=resolve("yolo9", {"max_labels": 100}).keys),
    }
    assert workload.calls["reset_classes"] == (2, {0: "a", 1: "b"})
    assert {c[3] for c in workload.calls["probe_batch"]} == {MOSAIC_TILES * 3}
    assert fitted == 15 and "capped at 15 so the 4 measured steps" in note


def test_autobatch_fits_before_the_synthetic_set_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []

    def fit(settings: ProfileConfig, device: Any, plan: Any) -> Any:
        order.append("fit")
        return 48, "fitted"

    class Stop(ProfileError):
        """Ends the run once the dataset is asked for."""

    def resolve(name: str, *, window_batches: int | None, batch: int | None) -> Any:
        order.append(f"resolve {name} batch {batch}")
        raise Stop("stop")

    monkeypatch.setattr(train, "resolve_device", lambda name: torch.device("cuda", 0))
    monkeypatch.setattr(train, "select_device", lambda device: None)  # no CUDA here
    monkeypatch.setattr(train, "_fit_batch", fit)
    monkeypatch.setattr("libreyolo.workload.data.dataset_config.resolve_dataset", resolve)
    with pytest.raises(Stop):
        train.profile_training(configured("run", {"batch": -1}))
    assert order == ["fit", "resolve synthetic batch 48"]


class CountingDevice(FakeDevice):
    """A FakeDevice for real probe steps: the n-th probe peaks as the n-th probe batch would."""

    def __init__(self, batches: tuple[int, ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.batches, self.num_resets = batches, 0

    def reset_peak(self) -> None:
        self.num_resets += 1

    def peak_allocated_bytes(self) -> int:
        return self.base + self.per_image * self.batches[self.num_resets - 1]


@pytest.mark.parametrize("weights", ["LibreYOLO9t.pt", "LibreYOLOXn.pt"])
def test_real_probe_steps_of_both_families_on_the_synthetic_set(
    weights: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real model and training step take every probe batch (16 boxes an image) on the
    CPU; only the memory readings are faked. 1 GB + 0.5 GB an image in 10 GB free fits 12."""
    from libreyolo.measure.autobatch import PROBE_BATCHES

    monkeypatch.setenv("LIBREYOLO_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setenv("LIBREYOLO_WEIGHTS_URL", "http://127.0.0.1:9/{name}")  # random init
    fake = CountingDevice(PROBE_BATCHES, free=10 * GB, total=10 * GB)
    settings = configured("run", {"model.weights": weights, "batch": -1, "imgsz": 64})
    plan = plan_window(2, 4, measured_flag="--steps")
    fitted, note = train._fit_batch(settings, torch.device("cpu"), plan, fake)
    assert fake.num_resets == len(PROBE_BATCHES)  # every probe ran a real step
    assert fitted == int((0.7 * 10 * GB - 1 * GB) // (GB // 2)) == 12
    assert note.startswith("--batch -1: batch 12 fits 70% of 10.0 GB available")
