"""The seed's defaults work: the synthetic set is sized to the run, calibration never fails it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from libreyolo.cli.main import main
from libreyolo.measure.window import fit_calibration, plan_window
from libreyolo.workload.data.dataset_config import DATASETS_ENV, resolve_dataset
from libreyolo.workload.data.synthetic import DEFAULT_TRAIN_IMAGES, train_images_for
from tests.conftest import invoke


@pytest.mark.parametrize(
    ("num_batches", "batch", "images"),
    [
        (None, 16, DEFAULT_TRAIN_IMAGES),  # AutoBatch: batch not known yet
        (35, None, DEFAULT_TRAIN_IMAGES),
        (0, 16, DEFAULT_TRAIN_IMAGES),
        (2, 4, DEFAULT_TRAIN_IMAGES),  # never fewer than the default set
        (4, 16, 64),
        (35, 16, 576),  # the seed's defaults: 5 warmup + 20 steps + 10 bare, batch 16
        (25, 16, 448),
        (3, 30, 128),
    ],
)
def test_synthetic_size_holds_the_window(
    num_batches: int | None, batch: int | None, images: int
) -> None:
    assert train_images_for(num_batches, batch) == images
    if num_batches and batch:
        assert images >= num_batches * batch and images % DEFAULT_TRAIN_IMAGES == 0


def test_synthetic_is_generated_for_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATASETS_ENV, str(tmp_path))
    spec = resolve_dataset("synthetic", window_batches=3, batch=30)
    assert spec.num_images == 128 and "train128" in str(spec.root)
    assert resolve_dataset("synthetic").num_images == DEFAULT_TRAIN_IMAGES


def test_calibration_fits_unchanged_when_there_is_room() -> None:
    plan = plan_window(5, 20)
    assert fit_calibration(plan, 30) == (plan, None)
    assert fit_calibration(plan, 36) == (plan, None)


def test_calibration_is_trimmed_to_the_epoch() -> None:
    plan = plan_window(5, 20)  # 10 bare planned
    fitted, note = fit_calibration(plan, 24)
    assert (fitted.num_measured, fitted.num_bare, fitted.traced) == (20, 4, True)
    assert note is not None and "calibrated on 4 bare steps, not 10" in note and "24" in note


@pytest.mark.parametrize("available", [4, 20])
def test_calibration_is_dropped_when_the_window_uses_every_batch(available: int) -> None:
    fitted, note = fit_calibration(plan_window(0, 20), available)
    assert fitted.num_bare == 0 and fitted.num_after_warmup == 20
    assert fitted.document().profiler_on is True  # the unsynced half is still traced
    assert note is not None and note.startswith("profiler overhead not calibrated")


def test_untraced_plan_needs_no_calibration() -> None:
    plan = plan_window(5, 20, traced=False)
    assert fit_calibration(plan, 20) == (plan, None)


@pytest.mark.slow
def test_seed_defaults_run_synthetic_on_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATASETS_ENV, str(tmp_path / "datasets"))
    project = tmp_path / "project"
    # The seed's defaults but --imgsz 64: at 640 this took 5.5 minutes on a shared 2-CPU box,
    # at 320 a minute, at 128 30 s; the window's shape (what this checks) does not depend on
    # the side.
    argv = ["profile", "run", "synthetic", "--device", "cpu", "--imgsz", "64"]
    argv += ["--project", str(project)]
    assert main(argv) == 0
    doc = json.loads((project / "run" / "profile.json").read_text(encoding="utf-8"))
    assert doc["run"]["batch"] == 16
    assert doc["run"]["num_images"] == 576
    window = doc["window"]
    assert (window["num_warmup"], window["num_measured"], window["num_bare"]) == (5, 20, 10)


@pytest.mark.slow
def test_seed_defaults_infer_on_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`profile infer` with nothing but --device cpu: the bundled image, 640 px, 20 + 100."""
    monkeypatch.setenv("LIBREYOLO_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setenv("LIBREYOLO_WEIGHTS_URL", "http://127.0.0.1:9/{name}")  # random init
    monkeypatch.chdir(tmp_path)  # the default --project is relative: runs/profile
    assert main(["profile", "infer", "--device", "cpu"]) == 0
    doc = json.loads((tmp_path / "runs/profile/infer/profile.json").read_text(encoding="utf-8"))
    assert (doc["run"]["batch"], doc["run"]["imgsz"]) == (1, 640)
    window = doc["window"]  # every one of the 100 runs a latency sample, 20 more synced
    assert (window["num_warmup"], window["num_unsynced"], window["num_synced"]) == (20, 100, 20)
    assert doc["metrics"]["latency_n"] == 100 and doc["metrics"]["latency_p50_ms"] > 0
    summary = invoke(["profile", "summary", "runs/profile/infer/profile.json", "--json"]).json()
    assert isinstance(summary, dict) and summary["latency"]["weak"] == []  # p99 from 100
