"""`profile run --trainer` against libreyolo 1.6.0 itself (no fake, no mock): its own
`libreyolo train`, in its own environment, offline on the generated dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from libreyolo.document.files import load
from tests.conftest import invoke
from tests.fixture_files import YOLO9T, YOLOX_N, fixture_file
from tests.trainer.v1_env import v1_python

pytestmark = pytest.mark.slow

WINDOW = ["--warmup", "1", "--steps", "2", "--device", "cpu", "--workers", "0", "--threads", "2"]


def _run(project: Path, weights: str, *extra: str) -> object:
    return invoke(
        ["profile", "run", "synthetic", "--trainer", v1_python(), "--weights", weights,
         "--batch", "2", "--imgsz", "96", "--project", str(project), *WINDOW,
         "--train-arg", "pretrained=false", *extra]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("weights", "model", "family"),
    [(YOLO9T, "YOLOv9-t", "yolo9"), (YOLOX_N, "YOLOX-n", "yolox")],
)
def test_1_6_0s_own_trainer_is_measured(
    tmp_path: Path, weights: str, model: str, family: str
) -> None:
    result = _run(tmp_path / "runs", str(fixture_file(weights)), "--json")
    assert result.status == 0, result.stderr
    path = tmp_path / "runs" / "run" / "profile.json"
    profile = load(str(path))
    trainer = profile.run.trainer
    assert trainer is not None and trainer.libreyolo == "1.6.0"
    assert trainer.python == v1_python() and trainer.torch.startswith("2.")
    assert trainer.command is not None and trainer.command.startswith("OMP_NUM_THREADS=2 ")
    assert "/libreyolo train data=" in trainer.command
    assert (profile.run.model, profile.run.family, profile.run.batch) == (model, family, 2)
    assert profile.run.imgsz == 96 and profile.run.num_workers == 0
    assert profile.environment.num_threads == 2  # OMP_NUM_THREADS reached 1.6.0's cap
    steps = profile.samples.steps
    assert [s.synced for s in steps] == [False, True]
    phases = steps[1].phase_ms
    assert set(phases) == {"dataload", "to_device", "forward", "backward", "optimizer"}
    assert phases["forward"] > 0 and phases["backward"] > 0 and phases["optimizer"] > 0
    assert profile.trace is not None and profile.trace.num_steps == 1
    ops = {op.name for op in profile.trace.ops}
    assert "aten::convolution_backward" in ops  # the trace is 1.6.0's real backward pass
    assert json.loads(result.stdout)["img_per_s"] > 0
    summary = invoke(["profile", "summary", str(path)])
    assert summary.status == 0 and summary.stdout.startswith(f"model {model} ({family})")


def test_a_family_this_package_does_not_implement(tmp_path: Path) -> None:
    result = _run(tmp_path / "runs", "picodet-s")
    assert result.status == 0, result.stderr
    path = tmp_path / "runs" / "run" / "profile.json"
    profile = load(str(path))
    assert (profile.run.model, profile.run.family) == ("PICODET-s", "picodet")
    summary = invoke(["profile", "summary", str(path)])
    assert summary.status == 0
    assert summary.stdout.startswith("model PICODET-s (picodet)")
    phases = invoke(["profile", "phases", str(path), "--json"])
    assert phases.status == 0
    assert {row["phase"] for row in phases.json()["phases"]} >= {"forward", "backward"}


def test_settings_1_6_0_refuses_are_exit_2_with_its_line(tmp_path: Path) -> None:
    result = _run(tmp_path / "runs", str(fixture_file(YOLO9T)), "--train-arg", "bogus_key=1")
    assert result.status == 2
    assert result.stderr.count("\n") == 1
    assert "libreyolo train refused the settings" in result.stderr
    assert "bogus_key" in result.stderr
    assert not (tmp_path / "runs").exists()
