"""`libreyolo profile infer` as a real process: SIGTERM and SIGKILL mid-run, and a quiet stderr
under --json (libkineto writes to file descriptor 2 itself, past Python)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from libreyolo.measure.artifacts import StagedRun
from tests.conftest import ROOT
from tests.fixture_files import YOLO9T, fixture_file

CHECKPOINT = fixture_file(YOLO9T)
pytestmark = pytest.mark.slow


@pytest.fixture
def weights() -> str:
    return str(CHECKPOINT)


def _start(weights: str, project: Path, *flags: str) -> subprocess.Popen[str]:
    argv = ["profile", "infer", "--weights", weights, "--device", "cpu", "--imgsz", "64"]
    return subprocess.Popen(
        [sys.executable, "-m", "libreyolo", *argv, *flags, "--project", str(project)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _staging(project: Path) -> list[Path]:
    return sorted(project.glob(".infer.partial-*"))


def _measuring(weights: str, project: Path) -> subprocess.Popen[str]:
    """A long run into `project` (over a previous set), once its staging directory exists."""
    (project / "infer").mkdir(parents=True)
    (project / "infer" / "profile.json").write_text("old")
    child = _start(weights, project, "--warmup", "0", "--runs", "100000", "--no-trace")
    deadline = time.monotonic() + 120
    while not _staging(project):
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the run never staged"
        time.sleep(0.1)
    time.sleep(1.0)  # into the model load or the window
    return child


def test_sigterm_cleans_up_and_exits_143(weights: str, tmp_path: Path) -> None:
    child = _measuring(weights, tmp_path)
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 143 and stderr == "terminated\n"
    assert _staging(tmp_path) == []
    assert (tmp_path / "infer" / "profile.json").read_text() == "old"


def test_the_next_run_removes_what_a_killed_run_left(weights: str, tmp_path: Path) -> None:
    child = _measuring(weights, tmp_path)
    child.kill()
    child.communicate(timeout=60)
    assert len(_staging(tmp_path)) == 1  # SIGKILL cannot be cleaned up after, by anyone
    with StagedRun(tmp_path / "infer") as run:
        assert _staging(tmp_path) == [run.staging]
    assert _staging(tmp_path) == []
    assert (tmp_path / "infer" / "profile.json").read_text() == "old"


def test_a_traced_run_under_json_writes_nothing_to_stderr(weights: str, tmp_path: Path) -> None:
    child = _start(weights, tmp_path, "--warmup", "1", "--runs", "2", "--json")
    stdout, stderr = child.communicate(timeout=300)
    assert child.returncode == 0, stderr
    assert stderr == ""
    assert '"profile":' in stdout and (tmp_path / "infer" / "profile_trace.json").is_file()
