"""Every point returns its result to Hydra: a float (its img/s) carrying the point's facts,
that survives pickling and feeds the tune search (Optuna driving it: test_plugins.py)."""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path
from typing import Any

import pytest
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf

from libreyolo.analysis.tune import Done, Measured, Next
from libreyolo.document.sweep_files import read_status
from libreyolo.document.tune_model import TuneSettings
from libreyolo.sweep.objective import PointObjective, point_objective
from libreyolo.sweep.tune_run import SearchState, measured_of
from libreyolo.sweep.tune_series import Series
from tests.sweep.test_report import make_point


def _facts(**changes: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "status": "ok",
        "code": None,
        "reason": None,
        "point": "b4_s64_amp1",
        "batch": 4,
        "imgsz": 64,
        "amp": True,
        "threads": None,
        "trials_img_per_s": (40.0, 41.0, 42.0),
        "latency_p50_ms": 90.0,
        "latency_p90_ms": 95.0,
        "latency_p99_ms": 99.0,
        "peak_vram_mb": None,
        "peak_rss_mb": 512.5,
        "memory_lines": (),
        "mfu": 0.04,
        "energy_j_per_img": None,
        "fits": True,
        "bound": None,
        "reused": False,
        "contended": False,
    }
    return facts | changes


def test_the_objective_is_its_img_per_s_and_pickles_whole() -> None:
    result = PointObjective(41.0, **_facts())
    assert float(result) == 41.0 and result > 40 and result.img_per_s == 41.0
    again = pickle.loads(pickle.dumps(result))
    assert type(again) is PointObjective and float(again) == 41.0
    assert again.facts() == result.facts() == _facts()
    missing = PointObjective(None, **_facts(status="failed", code="oom", fits=False, bound="oom"))
    assert math.isnan(missing) and missing.img_per_s is None
    assert pickle.loads(pickle.dumps(missing)).bound == "oom"
    with pytest.raises(TypeError, match="unknown point facts: colour"):
        PointObjective(1.0, **_facts(), colour="red")


def _point(root: Path, batch: int, ips: float | None) -> Path:
    return root / make_point(root, batch, 64, ips)


def test_the_objective_reads_the_point_record_and_its_profile(tmp_path: Path) -> None:
    folder = _point(tmp_path, 4, 41.0)
    profile_path = folder / "infer" / "profile.json"
    profile = json.loads(profile_path.read_text(encoding="utf-8"))
    profile["metrics"] |= {"latency_p99_ms": 99.5, "peak_rss_mb": 700.0, "peak_vram_mb": 1e308}
    profile["metrics"] |= {"mfu": 0.041, "energy_j_per_img": 0.0234}
    profile["trials"] = [{"metrics": {"img_per_s": v}} for v in (40.0, 41.0, 42.0)]
    profile_path.write_text(json.dumps(profile), encoding="utf-8")
    record = read_status(folder / "status.json")
    assert record is not None
    config = {"batch": 4, "imgsz": 64, "amp": True, "threads": None}
    result = point_objective(record, folder, tmp_path, config)
    assert float(result) == 41.0
    assert (result.point, result.batch, result.imgsz, result.amp) == ("b4_s64_amp1", 4, 64, True)
    assert result.trials_img_per_s == (40.0, 41.0, 42.0)
    assert (result.latency_p50_ms, result.latency_p99_ms) == (1000 * 4 / 41.0, 99.5)
    assert result.peak_vram_mb is None  # 1e308 is no value a sweep file takes: left out
    assert (result.peak_rss_mb, result.fits, result.bound) == (700.0, True, None)
    assert result.contended is False
    assert (result.mfu, result.energy_j_per_img) == (0.041, 0.0234)  # for an Optuna objective

    oom = _point(tmp_path, 8, None)  # failed, code oom, no profile
    record = read_status(oom / "status.json")
    assert record is not None
    result = point_objective(record, oom, tmp_path, config | {"batch": 8})
    assert math.isnan(result) and result.trials_img_per_s == ()
    assert (result.mfu, result.energy_j_per_img) == (None, None)
    assert (result.status, result.code, result.fits, result.bound) == (
        "failed",
        "oom",
        False,
        "oom",
    )


TRAINED = Path(__file__).parents[1] / "fixtures" / "docs" / "train_yolo9t_cpu_b8_320.profile.json"


def _with_tracked_step(tmp_path: Path, tensor_memory: object) -> PointObjective:
    """A point whose profile holds `tensor_memory` and the docs fixture's peak RSS."""
    folder = _point(tmp_path, 8, 4.8)
    profile_path = folder / "infer" / "profile.json"
    profile = json.loads(profile_path.read_text(encoding="utf-8"))
    trained = json.loads(TRAINED.read_text(encoding="utf-8"))
    profile["tensor_memory"] = tensor_memory
    profile["metrics"] |= {"peak_rss_mb": trained["metrics"]["peak_rss_mb"], "peak_vram_mb": None}
    profile_path.write_text(json.dumps(profile), encoding="utf-8")
    record = read_status(folder / "status.json")
    assert record is not None
    return point_objective(record, folder, tmp_path, {"batch": 8, "imgsz": 320})


def test_maxfit_reads_the_points_memory_lines_as_the_memory_reader_does(tmp_path: Path) -> None:
    """YOLOv9-t, 320 px, batch 8 (the docs fixture): 4000 MB of peak RSS holds batch 20, as
    `profile memory --budget-mb 4000` says (tests/cli/test_memory_reader.py)."""
    tracked = json.loads(TRAINED.read_text(encoding="utf-8"))["tensor_memory"]
    result = _with_tracked_step(tmp_path, tracked)
    assert len(result.memory_lines) == 4  # to_device, forward, backward, optimizer
    settings = TuneSettings(goal="maxfit", memory_budget_mb=4000)
    assert measured_of(_job(result), 8, settings, Path("/s")).predicted_fit == 20
    knee = TuneSettings(goal="knee", memory_budget_mb=4000)  # its growth stops there too
    assert measured_of(_job(result), 8, knee, Path("/s")).predicted_fit == 20
    # No budget: no prediction is made.
    unbounded = TuneSettings(goal="maxfit")
    assert measured_of(_job(result), 8, unbounded, Path("/s")).predicted_fit is None


@pytest.mark.parametrize("hostile", [None, "lots", {"peak_bytes": -1}, {"probes": [1, 2]}])
def test_a_point_without_a_trusted_tracked_step_predicts_nothing(
    tmp_path: Path, hostile: object
) -> None:
    result = _with_tracked_step(tmp_path, hostile)
    assert result.memory_lines == ()
    settings = TuneSettings(goal="maxfit", memory_budget_mb=4000)
    assert measured_of(_job(result), 8, settings, Path("/s")).predicted_fit is None


def _job(value: object, status: JobStatus = JobStatus.COMPLETED) -> JobReturn:
    ret = JobReturn(status=status, _return_value=value)
    ret.hydra_cfg = OmegaConf.create({"hydra": {"runtime": {"output_dir": "/s/b2_s64_amp1"}}})
    return ret


def test_the_search_reads_each_job_as_a_measured_batch() -> None:
    settings = TuneSettings(goal="latency", percentile=90, max_latency_ms=100.0)
    seen = measured_of(_job(PointObjective(41.0, **_facts())), 4, settings, Path("/s"))
    assert seen == Measured(
        point="b4_s64_amp1",
        batch=4,
        fits=True,
        trials=(40.0, 41.0, 42.0),
        latency_ms=95.0,  # the goal's percentile
        peak_mb=512.5,  # no VRAM: the resident memory
    )
    busy = measured_of(
        _job(PointObjective(41.0, **_facts(contended=True))), 4, settings, Path("/s")
    )
    assert busy.contended is True
    bound = _facts(status="failed", code="over_budget", fits=False, bound="over_budget")
    over = measured_of(_job(PointObjective(None, **bound)), 4, settings, Path("/s"))
    assert (over.fits, over.bound, over.failed, over.trials) == (False, "over_budget", None, ())
    usage = _facts(status="failed", code="usage", reason="--threads 9999 exceeds", fits=False)
    failed = measured_of(_job(PointObjective(None, **usage)), 4, settings, Path("/s"))
    assert (failed.fits, failed.bound, failed.failed) == (False, None, "--threads 9999 exceeds")
    crashed = measured_of(_job(ValueError("boom"), JobStatus.FAILED), 2, settings, Path("/s"))
    assert crashed == Measured(point="b2_s64_amp1", batch=2, fits=False, failed="ValueError: boom")


def test_each_round_launches_every_unfinished_series_next_batch_together() -> None:
    settings = TuneSettings(goal="maxfit", batch_max=2)
    series = [
        Series(("imgsz=64",), ("imgsz=64",), "infer", 1, 10, 64, True, None, settings),
        Series(("imgsz=96",), ("imgsz=96",), "infer", 1, 10, 96, True, None, settings),
    ]
    state = SearchState(series, settings)
    assert state.round() == [(0, Next(1)), (1, Next(1))]
    state.measured[0].append(Measured(point="a1", batch=1, fits=True, trials=(9.0,)))
    state.measured[1].append(Measured(point="b1", batch=1, fits=False, bound="oom"))
    assert state.round() == [(0, Next(2))]  # the second series is done: not even batch 1 fits
    assert state.done[1] == Done("none_fits", "batch 1 does not fit (out of memory)", None)
    state.measured[0].append(Measured(point="a2", batch=2, fits=True, trials=(9.0,)))
    assert state.round() == [] and state.done[0] is not None and state.done[0].batch == 2


WORLD = Path(__file__).parents[1] / "fixtures" / "docs" / "world_cpu_straggler" / "profile.json"


def test_a_world_point_is_the_whole_world_s_img_per_s_and_its_largest_rank_s_peak(
    tmp_path: Path,
) -> None:
    folder = _point(tmp_path, 4, 5.67)
    profile_path = folder / "infer" / "profile.json"
    world = json.loads(WORLD.read_text(encoding="utf-8"))
    world["world"]["ranks"][1]["peak_rss_mb"] = 905.2  # rank 0's own (and metrics'): 797.7
    world["trials"] = [{"metrics": {"img_per_s": 5.67}}]  # rank 0's window, not the world's
    profile_path.write_text(json.dumps(world), encoding="utf-8")
    record = read_status(folder / "status.json")
    assert record is not None
    result = point_objective(record, folder, tmp_path, {"batch": 4, "imgsz": 128})
    assert world["metrics"]["img_per_s"] == 5.67 and world["metrics"]["peak_rss_mb"] == 797.7
    assert float(result) == 11.16 and result.trials_img_per_s == (11.16,)
    assert result.peak_rss_mb == 905.2
    del world["world"]["ranks"][1]["peak_rss_mb"]  # one rank unmeasured: no peak to trust
    profile_path.write_text(json.dumps(world), encoding="utf-8")
    result = point_objective(record, folder, tmp_path, {"batch": 4, "imgsz": 128})
    assert result.peak_rss_mb is None
