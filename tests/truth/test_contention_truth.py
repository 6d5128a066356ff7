"""Known answers on a busy host: the same small windows measured quiet and beside planted busy
processes (two per usable CPU, tests/truth/hogs.py) must be `contended` exactly when the hogs
ran, keep the verdict a quiet host gives beside the contended one, and never name a bottleneck
the starved numbers suggest (an input-bound run with a hog is `contended`, not `compute`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from libreyolo.analysis.contention import CPU_WAIT_FRAC_CONTENDED
from tests.conftest import invoke
from tests.truth.hogs import busy_host
from tests.truth.scenarios import SCENARIOS, plain_checkpoint, run_scenario

pytestmark = pytest.mark.slow

QUIET_WAIT_FRAC_MAX = 0.05  # what this suite measures on a quiet 2-core VM is under 1 %


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("contention_inputs")


def _infer(inputs: Path, project: Path) -> dict[str, Any]:
    argv = ["profile", "infer", "--device", "cpu", "--imgsz", "160", "--warmup", "3"]
    argv += ["--runs", "20", "--no-trace", "--weights", str(plain_checkpoint(inputs))]
    result = invoke([*argv, "--project", str(project), "--json"])
    assert result.status == 0, result.stderr
    path = Path(json.loads(result.stdout)["profile"])
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def test_quiet_inference_is_not_contended(inputs: Path, tmp_path: Path) -> None:
    doc = _infer(inputs, tmp_path)
    metrics, host = doc["metrics"], doc["host"]
    assert host["measurable"] is True and host["num_workers"] == 0
    assert metrics["contended"] is False
    assert metrics["cpu_wait_frac"] < QUIET_WAIT_FRAC_MAX
    assert doc["verdict"]["bound"] == "compute" and doc["verdict"]["quiet_bound"] is None
    assert all(step["cpu_ms"] > 0 for step in doc["samples"]["steps"])


def test_inference_beside_busy_processes_is_contended(inputs: Path, tmp_path: Path) -> None:
    plain_checkpoint(inputs)  # built before the hogs start
    with busy_host():
        doc = _infer(inputs, tmp_path)
    metrics, verdict = doc["metrics"], doc["verdict"]
    assert metrics["contended"] is True, metrics
    assert metrics["cpu_wait_frac"] >= CPU_WAIT_FRAC_CONTENDED
    assert metrics["bound"] == verdict["bound"] == "contended"
    assert verdict["why"].startswith(f"threads waited {metrics['cpu_wait_frac']:.0%}")
    assert "other processes held the rest" in verdict["why"]
    assert verdict["quiet_bound"] == "compute" and "CPU" in verdict["quiet_why"]
    assert "stop the other work on this machine" in verdict["levers"]
    summary = invoke(["profile", "summary", str(tmp_path / "infer" / "profile.json")])
    assert "** CONTENDED:" in summary.stdout
    assert "steps hit hardest: #" in summary.stdout
    assert "read as if the host were quiet, these numbers say COMPUTE" in summary.stdout


def test_input_bound_training_with_a_hog_is_contended_not_compute(
    inputs: Path, tmp_path: Path
) -> None:
    scenario = next(s for s in SCENARIOS if s.name == "input-bound training")
    scenario.arguments(inputs, None)  # dataset and checkpoint built before the hogs start
    with busy_host():
        outcome = run_scenario(scenario, inputs, tmp_path / "project")
    assert outcome.document is not None, outcome.stderr
    metrics, verdict = outcome.document["metrics"], outcome.document["verdict"]
    assert metrics["contended"] is True, metrics
    assert verdict["bound"] == "contended" != "compute"
    assert verdict["quiet_bound"] in {"dataloader", "compute"}
