"""What the tracking tests share: one 2-point CPU sweep run with `hydra/callbacks=mlflow`, and
an MLflow file store opened with MLflow's own client."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.sweep.helpers import tiny_sweep_argv

ROOT = Path(__file__).resolve().parents[2]
POINTS = ["b1_s64_amp1", "b2_s64_amp1"]


@pytest.fixture(scope="session")
def tracked_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of a 2-point sweep (batch 1 and 2, imgsz 64) whose callback logged to MLflow's
    default store, `<sweep dir>/mlruns`."""
    sweep_dir = tmp_path_factory.mktemp("tracked") / "sweep"
    argv = tiny_sweep_argv(sweep_dir, "batch=1,2", "imgsz=64", "hydra/callbacks=mlflow")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"mlflow: 2 points logged to file:{sweep_dir / 'mlruns'} (experiment libreyolo)" in (
        proc.stderr.splitlines()
    ), proc.stderr
    return sweep_dir


@pytest.fixture
def mlflow_client(monkeypatch: pytest.MonkeyPatch) -> Any:
    """`open(uri)`: MLflow's client on a file store (MLflow 3 wants the file store opted in)."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    from mlflow.tracking import MlflowClient

    return MlflowClient
