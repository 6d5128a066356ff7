"""`hydra/sweeper=tune` end to end on the CPU: the knee search and its resume, and a training
maxfit search that meets a bound (planted as the memory budget check records one)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from libreyolo.document.sweep_io import read_tune_record
from libreyolo.document.tune_model import TuneRecord
from tests.sweep.helpers import CHECKPOINT, tune_argv

TUNE_KEYS = {"mode", "num_points", "recommended", "schema", "series", "settings"}
STEP_KEYS = {
    "batch",
    "bound",
    "fits",
    "img_per_s",
    "img_per_s_sd",
    "latency_ms",
    "peak_mb",
    "point",
    "reused",
    "contended",
    "trials",
    "versus",
    "ranked",
}


def _tune(
    sweep_dir: Path, *overrides: str, mode: str = "infer"
) -> subprocess.CompletedProcess[str]:
    argv = tune_argv(sweep_dir, *overrides, mode=mode)
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


def _json(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8")))


def _tune_record(root: Path) -> dict[str, Any]:
    """tune.json, once its reader (the one `summary` and the page use) has accepted it."""
    assert isinstance(read_tune_record(root / "tune.json"), TuneRecord)
    return _json(root / "tune.json")


def test_a_knee_search_recommends_a_measured_batch_and_resumes_without_measuring(
    tmp_path: Path,
) -> None:
    search = ("window.repeat=3", "tune.batch_max=2", "tune.batch_step=1")
    done = _tune(tmp_path, *search)
    assert done.returncode == 0, done.stderr
    record = _tune_record(tmp_path)
    assert set(record) == TUNE_KEYS
    assert (record["schema"], record["mode"], record["num_points"]) == (
        "libreyolo.tune/v1",
        "infer",
        2,
    )
    assert record["settings"] == {
        "goal": "knee",
        "batch_min": 1,
        "batch_max": 2,
        "batch_step": 1,
        "min_gain_pct": 5.0,
        "patience": 1,
        "percentile": 99,
        "max_latency_ms": None,
        "memory_budget_mb": None,
        "remeasure": 2,
        "rank_steps": 0,
    }
    (series,) = record["series"]
    assert (series["imgsz"], series["amp"], series["threads"]) == (64, True, None)
    assert series["overrides"] == []  # no axis swept but the batch
    path = series["path"]
    assert [step["batch"] for step in path] == [1, 2]  # the growth: 1, then batch_max
    for step in path:
        assert set(step) == STEP_KEYS
        assert step["point"] == f"b{step['batch']}_s64_amp1"
        assert step["fits"] is True and step["bound"] is None and step["reused"] is False
        assert step["trials"] == 3 and step["img_per_s"] > 0 and step["img_per_s_sd"] >= 0
        assert step["latency_ms"] > 0  # the p99 of the trials, by the goal's percentile
    assert path[0]["versus"] is None  # nothing smaller to test against
    versus = path[1]["versus"]
    assert set(versus) == {"batch", "gain_pct", "significant", "p_value"} and versus["batch"] == 1
    assert 0 <= versus["p_value"] <= 1
    assert series["stopped"] in ("no_gain", "batch_max") and series["why"]
    (recommended,) = record["recommended"]
    assert recommended["batch"] == series["batch"] and recommended["batch"] in (1, 2)
    assert recommended["point"] == f"b{recommended['batch']}_s64_amp1"
    assert recommended["evidence"].startswith(f"batch {recommended['batch']}: ")
    assert (recommended["train_settings"], recommended["config_file"]) == (None, None)
    assert not (tmp_path / "tuned.yaml").exists()  # inference writes no training config
    # printed before the table, as `summary <sweep dir>` prints it
    answer = (
        f"imgsz 64, amp on: recommended {recommended['evidence']} (stopped: {series['stopped']})"
    )
    assert answer in done.stdout.splitlines()
    statuses = {s["point"]: _json(tmp_path / s["point"] / "status.json") for s in path}

    again = _tune(tmp_path, *search)
    assert again.returncode == 0, again.stderr
    replayed = _tune_record(tmp_path)
    assert replayed["series"][0]["path"] == [step | {"reused": True} for step in path]
    assert replayed["recommended"] == record["recommended"]
    for point, status in statuses.items():  # nothing measured again: the records are kept
        assert _json(tmp_path / point / "status.json") == status | {"reused": True}
        assert f"{point}: reused" in again.stdout


def _plant_bound(root: Path, like: str, batch: int) -> str:
    """A point folder for `batch` as the budget check leaves one that did not fit: the request
    the search will make (a copy of `like`'s with the batch changed), failed `over_budget`."""
    request = _json(root / like / "point.json")
    old = request["config"]["batch"]
    request["config"]["batch"] = batch
    request["overrides"] = [
        o if o != f"batch={old}" else f"batch={batch}" for o in request["overrides"]
    ]
    name = like.replace(f"b{old}_", f"b{batch}_", 1)
    (root / name).mkdir()
    (root / name / "point.json").write_text(json.dumps(request), encoding="utf-8")
    status = {
        "status": "failed",
        "code": "over_budget",
        "reason": "peak 812.4 MB over the 600 MB budget (tune.memory_budget_mb)",
        "overrides": request["overrides"],
    }
    (root / name / "status.json").write_text(json.dumps(status), encoding="utf-8")
    return name


def test_a_maxfit_training_search_stops_at_a_bound_and_writes_the_config_to_train_with(
    tmp_path: Path,
) -> None:
    budget = "tune.memory_budget_mb=1000000"  # far above what a point at imgsz 64 needs
    first = _tune(tmp_path, "tune.goal=maxfit", "tune.batch_max=2", budget, mode="run")
    assert first.returncode == 0, first.stderr
    first_record = _json(tmp_path / "tune.json")
    assert first_record["recommended"][0]["batch"] == 2
    # predicted past batch_max before any point: batch_max is measured first, and alone
    assert [step["batch"] for step in first_record["series"][0]["path"]] == [2]
    bound = _plant_bound(tmp_path, "b2_s64_amp1", 8)

    # A wider search into the same folder. Under a budget that far above what it needs, the
    # probe steps before the first point predict past batch_max: the search starts at 8, the
    # bound it finds recorded (reused: other tune.* settings change no measurement), so the
    # prediction was off and it bisects below it (4, 6, then 7).
    done = _tune(
        tmp_path, "tune.goal=maxfit", "tune.batch_max=8", "tune.batch_step=1", budget, mode="run"
    )
    assert done.returncode == 0, done.stderr  # a bound is no failure of a search
    record = _tune_record(tmp_path)
    assert record["mode"] == "run" and record["num_points"] == 4
    (series,) = record["series"]
    assert series["prior"]["batch"] > 8 and series["prior"]["probe_s"] > 0
    steps = [(s["batch"], s["fits"], s["bound"], s["reused"]) for s in series["path"]]
    assert steps == [
        (8, False, "over_budget", True),
        (4, True, None, False),
        (6, True, None, False),
        (7, True, None, False),
    ]
    assert series["path"][0]["point"] == bound and series["path"][0]["img_per_s"] is None
    # what fits was measured, its peak resident memory too (held to the budget)
    assert all(s["peak_mb"] > 0 for s in series["path"] if s["fits"])
    assert (series["stopped"], series["batch"]) == ("no_fit", 7)
    assert series["why"] == (
        "batch 8 does not fit (over the memory budget); predicted from batch 7: 8"
    )
    (recommended,) = record["recommended"]
    assert recommended["batch"] == 7 and recommended["point"] == "b7_s64_amp1"
    evidence = recommended["evidence"]
    assert evidence.startswith("batch 7 fits (peak ")  # the window's resident memory
    assert evidence.endswith("; 8 does not fit (over the memory budget)")
    assert recommended["train_settings"] == "batch=7 imgsz=64 amp=true workers=0"
    assert recommended["config_file"] == "tuned.yaml"
    lines = done.stdout.splitlines()
    answer = lines.index(f"imgsz 64, amp on: recommended {evidence} (stopped: no_fit)")
    assert lines[answer + 1] == "train: batch=7 imgsz=64 amp=true workers=0 (tuned.yaml)"
    prior = series["prior"]
    assert lines[answer + 2] == (
        f"prior: batch {prior['batch']} predicted under the budget (peak RSS "
        f"{prior['predicted_mb']:.0f} MB), from two probe steps in {prior['probe_s']:.0f} s"
    )

    text = (tmp_path / "tuned.yaml").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == "# @package _global_"
    assert lines[1] == f"# libreyolo-sweep hydra/sweeper=tune: maxfit: {evidence}"
    assert yaml.safe_load(text) == {
        "batch": 7,
        "imgsz": 64,
        "amp": True,
        "dataset": {"name_or_path": "synthetic", "workers": 0},
        "model": {"family": "yolo9", "size": None, "weights": str(CHECKPOINT)},
    }
