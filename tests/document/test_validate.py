"""Numbers no measurement produces (NaN, infinity, negative times, p50 > p90) exit 1 with the
field's path (libreyolo/document/validate.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from libreyolo.document.codec import from_builtins, to_builtins
from libreyolo.document.model import (
    KernelStat,
    Profile,
    RunInfo,
    Samples,
    StepSample,
    Tool,
    TraceAnalysis,
    TraceStep,
    Trial,
)
from libreyolo.document.validate import HINT, check_metrics
from libreyolo.errors import AnalysisError
from tests.conftest import invoke

PREFIX = "failed to analyse p.json: invalid profile: "


def _raw() -> dict[str, Any]:
    """A small valid inference document with samples, a trace, metrics and a trial."""
    profile = Profile(
        kind="infer",
        created=None,
        tool=Tool(version="2.0.0"),
        run=RunInfo(mode="inference", batch=1, config={"offset": -5}),
        samples=Samples(
            steps=[
                StepSample(index=i, synced=False, wall_ms=10.0, phase_ms={"forward": 4.0})
                for i in range(4)
            ],
            latency_ms=[10.0, 11.0, 12.0],
        ),
        trace=TraceAnalysis(
            source="profiler_steps",
            num_steps=1,
            window_ms=10.0,
            has_gpu=True,
            steps=[TraceStep(index=0, start_us=-100.0, cpu_ms=10.0)],
            num_kernels=1,
            kernels=[
                KernelStat(name="k", category="other", tensor_core=False, total_ms=1.0, num_calls=1)
            ],
        ),
        metrics={
            "step_ms": 10.0,
            "latency_p50_ms": 10.0,
            "latency_p90_ms": 11.0,
            "latency_p99_ms": 12.0,
            "profiler_overhead_pct": -3.0,
            "bound": "compute",
        },
        trials=[Trial(index=0, metrics={"img_per_s": 100.0})],
    )
    return to_builtins(profile)


def _problem(raw: dict[str, Any]) -> str:
    with pytest.raises(AnalysisError) as caught:
        from_builtins(raw, origin="p.json")
    assert caught.value.hint == HINT
    return caught.value.message.removeprefix(PREFIX)


def test_validate_accepts_a_valid_document_with_negative_free_values() -> None:
    raw = _raw()  # start_us -100, config.offset -5, profiler_overhead_pct -3: all allowed
    assert from_builtins(raw, origin="p.json").samples.latency_ms == [10.0, 11.0, 12.0]


@pytest.mark.parametrize(
    ("value", "said"),
    [(float("nan"), "NaN"), (float("inf"), "Infinity"), (float("-inf"), "-Infinity")],
)
def test_validate_refuses_non_finite_numbers_with_their_path(value: float, said: str) -> None:
    raw = _raw()
    raw["samples"]["steps"][3]["wall_ms"] = value
    assert _problem(raw) == f"samples.steps[3].wall_ms is {said}"


def test_validate_refuses_nan_in_free_form_maps() -> None:
    raw = _raw()
    raw["run"]["config"]["lr"] = float("nan")
    assert _problem(raw) == "run.config.lr is NaN"


@pytest.mark.parametrize(
    ("where", "value", "problem"),
    [
        (("trace", "kernels", 0, "total_ms"), -1.5, "trace.kernels[0].total_ms is negative (-1.5)"),
        (("trace", "num_kernels"), -1, "trace.num_kernels is negative (-1)"),
        (("samples", "latency_ms", 1), -2.0, "samples.latency_ms[1] is negative (-2.0)"),
        (
            ("samples", "steps", 0, "phase_ms", "forward"),
            -4.0,
            "samples.steps[0].phase_ms.forward is negative (-4.0)",
        ),
        (("metrics", "step_ms"), -10.0, "metrics.step_ms is negative (-10.0)"),
        (("metrics", "step_ms"), "fast", "metrics.step_ms is str, not a number"),
        (("trials", 0, "metrics", "img_per_s"), -1, "trials[0].metrics.img_per_s is negative (-1)"),
        (("trace", "num_kernels"), 2**70, "trace.num_kernels is too large (more than 64 bits)"),
    ],
)
def test_validate_refuses_impossible_values(where: tuple, value: Any, problem: str) -> None:
    raw = _raw()
    node = raw
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    assert _problem(raw) == problem


@pytest.mark.parametrize(
    ("p50", "p90", "p99", "problem"),
    [
        (12.0, 10.0, 13.0, "metrics.latency_p50_ms (12.0) > metrics.latency_p90_ms (10.0)"),
        (10.0, 12.0, 11.0, "metrics.latency_p90_ms (12.0) > metrics.latency_p99_ms (11.0)"),
        (12.0, None, 11.0, "metrics.latency_p50_ms (12.0) > metrics.latency_p99_ms (11.0)"),
    ],
)
def test_validate_refuses_out_of_order_percentiles(
    p50: float, p90: float | None, p99: float, problem: str
) -> None:
    raw = _raw()
    raw["metrics"] |= {"latency_p50_ms": p50, "latency_p90_ms": p90, "latency_p99_ms": p99}
    assert _problem(raw) == problem


def test_check_metrics_returns_a_valid_map_itself() -> None:
    metrics = {"step_ms": 1.0, "bound": "compute", "memory_pressure": False}
    assert check_metrics(metrics, origin="p.json") is metrics


def _write(tmp_path: Path, raw: dict[str, Any]) -> Path:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(raw), encoding="utf-8")  # json writes NaN as the literal NaN
    return path


@pytest.mark.parametrize("argv", [["summary"], ["get"], ["get", "step_ms"], ["kernels"]])
def test_reader_on_a_nan_profile_exits_1_naming_the_field(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = _raw()
    raw["metrics"]["step_ms"] = float("nan")
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, raw)
    result = invoke(["profile", argv[0], "p.json", *argv[1:]])
    assert (result.status, result.stdout) == (1, "")
    assert result.stderr == f"{PREFIX}metrics.step_ms is NaN ({HINT})\n"


@pytest.mark.parametrize("argv", [["summary"], ["get", "latency_p50_ms"]])
def test_reader_on_out_of_order_percentiles_exits_1(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = _raw()
    raw["metrics"]["latency_p50_ms"] = 12.0
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, raw)
    result = invoke(["profile", argv[0], "p.json", *argv[1:], "--json"])
    assert result.status == 1
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "cannot_analyse"
    assert error["message"] == (
        f"{PREFIX}metrics.latency_p50_ms (12.0) > metrics.latency_p90_ms (11.0)"
    )


def test_reader_on_a_v1_file_with_nan_names_the_v1_field(
    reference_v1: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = json.loads((reference_v1 / "infer_b1.profile.json").read_text(encoding="utf-8"))
    raw["window"]["real_steps"] = float("nan")  # the migration would divide by it
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, raw)
    result = invoke(["profile", "summary", "p.json"])
    assert result.status == 1
    assert result.stderr == f"{PREFIX}window.real_steps is NaN ({HINT})\n"
