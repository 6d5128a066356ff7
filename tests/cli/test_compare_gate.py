"""`compare --fail-on-regression`: exit 4 with the comparison still on stdout, and exit 2 with
one line for every flag combination it cannot judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from libreyolo.document.files import save
from libreyolo.document.model import Profile, RunInfo, Tool, Trial
from tests.conftest import invoke

FAILED = "regression: img/s fell 20.0% (> 5%), significant (Welch t, df=4.0)"


def _write(path: Path, img_per_s: list[float], *, mode: str = "training", step: bool = True) -> str:
    """A hand-made profile: one trial per value (none for a single value), step_ms = 1000/img."""

    def metrics(value: float) -> dict[str, float]:
        out = {"img_per_s": value, "latency_p50_ms": 1000.0 / value}
        return out | ({"step_ms": 1000.0 / value} if step else {})

    mean = sum(img_per_s) / len(img_per_s)
    trials = [Trial(index=i, metrics=metrics(v)) for i, v in enumerate(img_per_s)]
    profile = Profile(
        kind="train" if mode == "training" else "infer",
        created=None,
        tool=Tool(version="2.0.0"),
        run=RunInfo(mode=mode),  # type: ignore[arg-type]
        metrics=metrics(mean) if mode == "inference" else metrics(mean) | {"latency_p50_ms": None},
        trials=trials if len(trials) > 1 else [],
    )
    return str(save(profile, path))


@pytest.fixture
def pair(tmp_path: Path) -> tuple[str, str]:
    """Training trials: after is 20 % slower."""
    return (
        _write(tmp_path / "before.json", [100.0, 101.0, 99.0]),
        _write(tmp_path / "after.json", [80.0, 81.0, 79.0]),
    )


def test_a_failed_gate_prints_the_comparison_then_exits_4(pair: tuple[str, str]) -> None:
    result = invoke(["profile", "compare", *pair, "--fail-on-regression", "5"])
    assert result.status == 4
    lines = result.stdout.splitlines()
    assert lines[0].startswith("img/s          100.0 -> 80.0 (-20%)  [significant]")
    assert lines[-1] == "gate: FAILED, img/s fell 20.0% (> 5%), significant (Welch t, df=4.0)"
    assert result.stderr == FAILED + "\n"


def test_a_failed_gate_under_json(pair: tuple[str, str]) -> None:
    result = invoke(["profile", "compare", *pair, "--fail-on-regression", "5", "--json"])
    assert result.status == 4
    doc = json.loads(result.stdout)
    assert doc["gate"] == {
        "metric": "img_per_s",
        "threshold_pct": 5.0,
        "change_pct": -20.0,
        "significant": True,
        "failed": True,
    }
    assert doc["img_per_s"]["significant"] is True and doc["step_ms"]["significant"] is True
    assert json.loads(result.stderr) == {
        "error": {"code": "regression", "message": FAILED, "hint": None}
    }


def test_a_regression_under_the_threshold_passes(pair: tuple[str, str]) -> None:
    result = invoke(["profile", "compare", *pair, "--fail-on-regression", "25"])
    assert result.status == 0 and result.stderr == ""
    assert result.stdout.splitlines()[-1] == (
        "gate: passed, img/s fell 20.0% (<= 25%), significant (Welch t, df=4.0)"
    )


def test_the_gate_on_step_time(pair: tuple[str, str]) -> None:
    result = invoke(
        ["profile", "compare", *pair, "--fail-on-regression", "5", "--metric", "step_ms"]
    )
    assert result.status == 4
    assert result.stderr.startswith("regression: step time rose 25.0% (> 5%), significant")


def test_an_improvement_passes(pair: tuple[str, str]) -> None:
    after, before = pair
    result = invoke(["profile", "compare", before, after, "--fail-on-regression", "5", "--json"])
    assert result.status == 0
    assert json.loads(result.stdout)["gate"]["failed"] is False


def test_without_a_gate_the_json_gate_is_null(pair: tuple[str, str]) -> None:
    result = invoke(["profile", "compare", *pair, "--json"])
    assert result.status == 0 and json.loads(result.stdout)["gate"] is None


def test_inference_gates_on_latency_p50_by_default(tmp_path: Path) -> None:
    before = _write(tmp_path / "a.json", [100.0, 101.0, 99.0], mode="inference")
    after = _write(tmp_path / "b.json", [80.0, 81.0, 79.0], mode="inference")
    result = invoke(["profile", "compare", before, after, "--fail-on-regression", "5", "--json"])
    assert result.status == 4
    assert json.loads(result.stdout)["gate"]["metric"] == "latency_p50_ms"


@pytest.mark.parametrize("value", ["0", "-5", "abc", "nan", "inf"])
def test_a_bad_threshold_exits_2(pair: tuple[str, str], value: str) -> None:
    result = invoke(["profile", "compare", *pair, "--fail-on-regression", value])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert f"must be a percentage above 0, got {value}" in result.stderr


def _refused(argv: list[str]) -> str:
    result = invoke(["profile", "compare", *argv])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    return result.stderr.rstrip("\n")


def test_metric_without_a_gate_exits_2(pair: tuple[str, str]) -> None:
    assert _refused([*pair, "--metric", "step_ms"]) == (
        "--metric names the gated metric: it needs --fail-on-regression PCT"
    )


def test_an_unknown_metric_exits_2(pair: tuple[str, str]) -> None:
    message = _refused([*pair, "--fail-on-regression", "5", "--metric", "gpu_util"])
    assert "invalid choice: 'gpu_util'" in message


def test_a_single_run_side_is_named(pair: tuple[str, str], tmp_path: Path) -> None:
    single = _write(tmp_path / "single.json", [80.0])
    assert _refused([pair[0], single, "--fail-on-regression", "5"]) == (
        "--fail-on-regression needs trials on both sides; the after profile is a single run: "
        "measure it with --repeat 3"
    )
    assert _refused([single, single, "--fail-on-regression", "5"]) == (
        "--fail-on-regression needs trials on both sides; the before profile is a single run and "
        "the after profile is a single run: measure them with --repeat 3"
    )


def test_a_metric_missing_on_one_side_exits_2(pair: tuple[str, str], tmp_path: Path) -> None:
    no_step = _write(tmp_path / "no_step.json", [100.0, 101.0], step=False)
    argv = [no_step, pair[1], "--fail-on-regression", "5", "--metric", "step_ms"]
    assert _refused(argv) == "--metric step_ms: the before profile has no step_ms"


def test_latency_on_training_profiles_exits_2(pair: tuple[str, str]) -> None:
    message = _refused([*pair, "--fail-on-regression", "5", "--metric", "latency_p50_ms"])
    assert message == (
        "--metric latency_p50_ms needs inference profiles; the before profile is a training run "
        "(use --metric img_per_s or step_ms)"
    )


def test_v1_trials_hold_img_per_s_only(reference_v1: Path, monkeypatch) -> None:
    monkeypatch.chdir(reference_v1)
    repeat = ["infer_repeat.json", "infer_repeat.json", "--fail-on-regression", "5"]
    assert _refused(repeat) == (
        "--fail-on-regression needs trials on both sides; the before profile has no trials of "
        "this metric and the after profile has no trials of this metric: measure them with "
        "--repeat 3"
    )
    result = invoke(["profile", "compare", *repeat, "--metric", "img_per_s"])
    assert result.status == 0
    assert result.stdout.splitlines()[-1].startswith("gate: passed, img/s rose 0.0% (no regr")
