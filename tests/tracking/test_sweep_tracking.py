"""A sweep with `hydra/callbacks=mlflow` leaves one MLflow run per point under a parent run;
`profile log <sweep dir>` logs the same runs, failed points included."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from libreyolo.document.files import load
from tests.conftest import invoke
from tests.tracking.conftest import POINTS
from tests.tracking.stores import artifacts, runs_by_name

pytestmark = pytest.mark.slow  # the session's 2-point sweep

METRICS = {
    "img_per_s",
    "step_ms",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "peak_rss_bytes",
    "mfu_frac",
}


def test_callback_logs_one_run_per_point_and_a_parent(
    tracked_sweep: Path, mlflow_client: Any
) -> None:
    client = mlflow_client(f"file:{tracked_sweep / 'mlruns'}")
    runs = runs_by_name(client)
    assert sorted(runs) == sorted([*POINTS, tracked_sweep.name])
    parent = runs[tracked_sweep.name]
    assert parent.info.status == "FINISHED" and parent.data.tags["kind"] == "sweep"
    assert artifacts(client, parent) == ["sweep.html", "sweep.json"]
    for batch, name in enumerate(POINTS, start=1):
        run = runs[name]
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert run.data.tags["status"] == "ok" and run.info.status == "FINISHED"
        assert run.data.params["batch"] == str(batch) and run.data.params["imgsz"] == "64"
        assert run.data.params["exec"] == "eager" and run.data.params["mode"] == "infer"
        assert set(run.data.metrics) == METRICS
        path = str(tracked_sweep / name / "infer" / "profile.json")
        profile, summary = load(path), invoke(["profile", "summary", path, "--json"]).json()
        assert run.data.metrics["img_per_s"] == summary["img_per_s"]
        assert run.data.metrics["latency_p50_ms"] == summary["latency"]["p50_ms"]
        assert run.data.metrics["mfu_frac"] == summary["compute"]["mfu"]
        assert profile.host_memory is not None
        assert run.data.metrics["peak_rss_bytes"] == profile.host_memory.peak_rss_bytes
        assert artifacts(client, run) == ["profile.json"]


def _with_failed_point(sweep: Path, copy: Path) -> Path:
    """A copy of `sweep` whose second point is recorded as out of memory."""
    shutil.copytree(sweep, copy, ignore=shutil.ignore_patterns("mlruns"))
    record = json.loads((copy / "sweep.json").read_text())
    record["points"][POINTS[1]].update(
        status="failed",
        reason="out of memory at batch 2",
        code="out_of_memory",
        profile=None,
        metrics={},
        verdict=None,
    )
    record.update(num_ok=1, num_failed=1)
    (copy / "sweep.json").write_text(json.dumps(record))
    return copy


def test_log_sweep_dir_to_mlflow_and_tensorboard(
    tracked_sweep: Path, tmp_path: Path, mlflow_client: Any
) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    sweep = _with_failed_point(tracked_sweep, tmp_path / "sweep")
    uri, board = f"file:{tmp_path / 'mlruns'}", tmp_path / "tb"
    result = invoke(
        ["profile", "log", str(sweep), "--mlflow", uri, "--tensorboard", str(board), "--json"]
    )
    assert result.status == 0 and result.stderr == ""
    doc = result.json()
    assert [(r["name"], r["status"], r["reason"]) for r in doc["runs"]] == [
        (POINTS[0], "ok", None),
        (POINTS[1], "failed", "out of memory at batch 2"),
    ]
    client = mlflow_client(uri)
    runs = runs_by_name(client)
    parent, ok, failed = runs["sweep"], runs[POINTS[0]], runs[POINTS[1]]
    assert parent.info.run_id == doc["mlflow"]["parent_run_id"]
    assert parent.info.status == "FAILED"  # not every point finished
    assert failed.info.status == "FAILED" and failed.data.metrics == {}
    assert failed.data.tags["status"] == "failed"
    assert failed.data.tags["reason"] == "out of memory at batch 2"
    assert failed.data.params["batch"] == "2" and artifacts(client, failed) == []
    assert set(ok.data.metrics) == METRICS

    for step, name in enumerate(POINTS):
        assert doc["runs"][step]["tensorboard_dir"] == str(board / name)
        events = EventAccumulator(str(board / name))
        events.Reload()
        tags = sorted(events.Tags()["scalars"])
        assert tags == (sorted(METRICS) if step == 0 else [])
        for tag in tags:
            (scalar,) = events.Scalars(tag)
            assert scalar.step == step
            # TensorBoard keeps a float32
            assert scalar.value == pytest.approx(ok.data.metrics[tag], rel=1e-6)


def test_lost_point_profile_is_logged_failed_with_the_reason(
    tracked_sweep: Path, tmp_path: Path
) -> None:
    sweep = tmp_path / "sweep"
    shutil.copytree(tracked_sweep, sweep, ignore=shutil.ignore_patterns("mlruns"))
    (sweep / POINTS[0] / "infer" / "profile.json").unlink()
    result = invoke(["profile", "log", str(sweep), "--tensorboard", str(tmp_path / "tb"), "--json"])
    assert result.status == 0, result.stderr
    first = result.json()["runs"][0]
    assert first["status"] == "failed" and first["reason"].startswith("not found")
