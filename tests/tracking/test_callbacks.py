"""The packaged tracking callbacks: how they compose, what the trust check lets through, and
what each writes when a multirun ends (called here on a finished sweep's folder)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from libreyolo.boundary.output import Output
from libreyolo.config.schema import register_schemas
from libreyolo.sweep.tracking_callbacks import MlflowCallback, TensorboardCallback, run_queued
from libreyolo.sweep.trust import Trust, composed_hydra, untrusted
from tests.tracking.conftest import POINTS
from tests.tracking.stores import runs_by_name

REPORT = {"_target_": "libreyolo.sweep.app.SweepReportCallback"}
MLFLOW = {
    "_target_": "libreyolo.sweep.tracking_callbacks.MlflowCallback",
    "tracking_uri": None,
    "experiment": "libreyolo",
}
TENSORBOARD = {
    "_target_": "libreyolo.sweep.tracking_callbacks.TensorboardCallback",
    "log_dir": None,
}


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("mlflow", {"sweep_report": REPORT, "mlflow": MLFLOW}),
        ("tensorboard", {"sweep_report": REPORT, "tensorboard": TENSORBOARD}),
        (
            "[mlflow,tensorboard]",
            {"sweep_report": REPORT, "mlflow": MLFLOW, "tensorboard": TENSORBOARD},
        ),
    ],
)
def test_a_tracking_callback_keeps_the_report_and_passes_the_trust_check(
    choice: str, expected: dict[str, object]
) -> None:
    register_schemas()
    hydra = composed_hydra(["-m", "batch=1,2", f"hydra/callbacks={choice}"])
    assert hydra is not None and hydra["callbacks"] == expected
    assert untrusted(hydra, Trust()) is None


def test_another_target_under_our_key_is_refused() -> None:
    register_schemas()
    hydra = composed_hydra(
        ["-m", "batch=1,2", "hydra/callbacks=mlflow", "hydra.callbacks.mlflow._target_=os.system"]
    )
    assert hydra is not None
    refusal = untrusted(hydra, Trust())
    assert refusal is not None and refusal.message.startswith(
        "refusing to instantiate hydra.callbacks.mlflow._target_ = os.system"
    )


def _copy(sweep: Path, to: Path) -> Any:
    shutil.copytree(sweep, to, ignore=shutil.ignore_patterns("mlruns"))
    return OmegaConf.create({"hydra": {"sweep": {"dir": str(to)}}})


@pytest.mark.slow  # the session's 2-point sweep
def test_tensorboard_callback_writes_a_run_folder_per_point(
    tracked_sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _copy(tracked_sweep, tmp_path / "sweep")
    TensorboardCallback().on_multirun_end(config)
    board = tmp_path / "sweep" / "tensorboard"
    assert not board.exists()  # queued: main logs once it has written the report
    run_queued(Output.plain())
    assert sorted(p.name for p in board.iterdir()) == POINTS
    assert f"tensorboard: 2 points logged to {board}" in capsys.readouterr().err


@pytest.mark.slow  # the session's 2-point sweep
def test_mlflow_callback_takes_the_environments_uri(
    tracked_sweep: Path, tmp_path: Path, mlflow_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _copy(tracked_sweep, tmp_path / "sweep")
    uri = f"file:{tmp_path / 'elsewhere'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    MlflowCallback(experiment="from-env").on_multirun_end(config)
    run_queued(Output.plain())  # what main does once the report is written
    assert sorted(runs_by_name(mlflow_client(uri), "from-env")) == sorted([*POINTS, "sweep"])
    assert not (tmp_path / "sweep" / "mlruns").exists()


@pytest.mark.slow  # the session's 2-point sweep
def test_a_callback_that_cannot_log_warns_and_does_not_raise(
    tracked_sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _copy(tracked_sweep, tmp_path / "sweep")
    MlflowCallback(tracking_uri="bogus://nowhere").on_multirun_end(config)
    run_queued(Output.plain())  # what main does once the report is written
    err = capsys.readouterr().err
    assert err.startswith("warning: mlflow: nothing logged: cannot use MLflow at bogus://nowhere")
