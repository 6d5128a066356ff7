"""Known answers on a busy host: the same small windows measured quiet and beside planted busy
processes (two per usable CPU, tests/truth/hogs.py) must be `contended` exactly when the hogs
ran, and never name a bottleneck the starved numbers suggest: beside the contended verdict they
say only what they measured (an input-bound run with a hog is `contended`, not `compute`; a
preprocess-bound one is not read as `compute` either, although its CPU forward grows most).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from libreyolo.analysis.contention import CPU_WAIT_FRAC_CONTENDED
from tests.conftest import invoke
from tests.quiet import quietly, starved
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
    doc = quietly(lambda: _infer(inputs, tmp_path), starved)  # other work on the machine aside
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
    assert verdict["quiet_bound"] is None  # CPU times inflated by the wait name nothing
    assert re.fullmatch(
        r"preprocess \d+%, forward \d+%, postprocess \d+% of the step \(inflated unevenly by "
        r"the wait for a CPU: they name no bottleneck\)",
        verdict["quiet_why"],
    )
    assert "stop the other work on this machine" in verdict["levers"]
    summary = invoke(["profile", "summary", str(tmp_path / "infer" / "profile.json")])
    assert "** CONTENDED:" in summary.stdout
    assert "steps hit hardest: #" in summary.stdout
    assert "   as measured on the busy host: preprocess " in summary.stdout
    assert "these numbers say" not in summary.stdout


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
    assert verdict["quiet_bound"] is None and "dataload " in verdict["quiet_why"]


def test_preprocess_bound_inference_with_a_hog_is_not_read_as_compute(
    inputs: Path, tmp_path: Path
) -> None:
    scenario = next(s for s in SCENARIOS if s.name.startswith("preprocess-bound"))
    scenario.arguments(inputs, None)  # the huge image and checkpoint built before the hogs
    with busy_host():
        outcome = run_scenario(scenario, inputs, tmp_path / "project")
    assert outcome.document is not None, outcome.stderr
    metrics, verdict = outcome.document["metrics"], outcome.document["verdict"]
    assert metrics["contended"] is True, metrics
    assert verdict["bound"] == "contended" and verdict["quiet_bound"] is None
    assert verdict["quiet_why"].startswith("preprocess ")
