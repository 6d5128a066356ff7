"""`profile log` on one profile: MLflow (read back with MlflowClient) and TensorBoard (read
back with TensorBoard's EventAccumulator)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from libreyolo.tracking.tensorboard_sink import masked_crc32c
from tests.conftest import invoke
from tests.tracking.stores import artifacts, runs_by_name

# tests/fixtures/reference_v1/infer_b1.profile.json, as `summary --json` prints it
B1_METRICS = {
    "img_per_s": 7.81,
    "step_ms": 127.97,
    "latency_p50_ms": 120.979,
    "latency_p90_ms": 144.509,
    "latency_p99_ms": 151.335,
}
B1_PARAMS = {
    "mode": "infer",
    "model": "LibreYOLO9t.pt",
    "device": "cpu",
    "batch": "1",
    "imgsz": "640",
    "amp": "False",
}


def test_log_profile_to_mlflow(reference_v1: Path, tmp_path: Path, mlflow_client: Any) -> None:
    profile = str(reference_v1 / "infer_b1.profile.json")
    uri = f"file:{tmp_path / 'mlruns'}"
    result = invoke(["profile", "log", profile, "--mlflow", uri, "--experiment", "e1", "--json"])
    assert result.status == 0 and result.stderr == ""
    doc = result.json()
    assert list(doc) == ["source", "mlflow", "tensorboard", "runs"]
    assert doc["source"] == profile and doc["tensorboard"] is None
    assert doc["mlflow"]["tracking_uri"] == uri and doc["mlflow"]["experiment"] == "e1"
    assert doc["mlflow"]["parent_run_id"] is None
    (row,) = doc["runs"]
    assert list(row) == ["name", "status", "reason", "mlflow_run_id", "tensorboard_dir"]
    assert row["name"] == "infer_b1" and row["status"] == "ok" and row["reason"] is None

    client = mlflow_client(uri)
    run = runs_by_name(client, "e1")["infer_b1"]
    assert run.info.run_id == row["mlflow_run_id"] and run.info.status == "FINISHED"
    assert doc["mlflow"]["experiment_id"] == run.info.experiment_id
    assert run.data.metrics == B1_METRICS
    assert run.data.params == B1_PARAMS
    assert run.data.tags["status"] == "ok" and "mlflow.parentRunId" not in run.data.tags
    assert artifacts(client, run) == ["infer_b1.profile.json"]


def test_log_profile_to_tensorboard(reference_v1: Path, tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    profile = str(reference_v1 / "infer_b1.profile.json")
    result = invoke(["profile", "log", profile, "--tensorboard", str(tmp_path / "tb")])
    assert result.status == 0 and result.stderr == ""
    assert result.stdout.splitlines() == [
        f"tensorboard: {tmp_path / 'tb'}",
        f"  infer_b1  ok           {tmp_path / 'tb' / 'infer_b1'}",
    ]
    events = EventAccumulator(str(tmp_path / "tb" / "infer_b1"))
    events.Reload()
    assert sorted(events.Tags()["scalars"]) == sorted(B1_METRICS)
    for tag, value in B1_METRICS.items():
        (scalar,) = events.Scalars(tag)
        assert scalar.step == 0 and scalar.value == pytest.approx(value, rel=1e-6)


@pytest.mark.parametrize("data", [b"", b"123456789", bytes(range(256)) * 3])
def test_record_checksum_is_tensorboards(data: bytes) -> None:
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as theirs

    assert masked_crc32c(data) == theirs(data)


def test_trace_and_report_beside_the_profile_are_attached_but_no_link(
    reference_v1: Path, tmp_path: Path, mlflow_client: Any
) -> None:
    folder = tmp_path / "infer"
    folder.mkdir()
    shutil.copyfile(reference_v1 / "infer_b1.profile.json", folder / "profile.json")
    (folder / "profile_trace.json").write_text("{}")
    (tmp_path / "secret.txt").write_text("not for the server")
    (folder / "report.html").symlink_to(tmp_path / "secret.txt")
    uri = f"file:{tmp_path / 'mlruns'}"
    result = invoke(["profile", "log", str(folder / "profile.json"), "--mlflow", uri])
    assert result.status == 0, result.stderr
    client = mlflow_client(uri)
    run = runs_by_name(client)["infer"]  # a profile.json is named after its folder
    assert artifacts(client, run) == ["profile.json", "profile_trace.json"]
