"""End to end on the four real GPU traces: trace -> profile -> metrics, verdict and readers."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from libreyolo.analysis.compare import compare
from libreyolo.analysis.summary import summarize
from libreyolo.analysis.whatif import project
from libreyolo.cli.sources import open_profile
from libreyolo.document.codec import to_builtins
from libreyolo.document.files import load, save
from tests.fixture_files import fixture_dir

A100 = "hta_a100_ddp_train_3steps.json.gz"
V100 = "hta_v100_ddp_train_5steps_ns.json.gz"
H100 = "tracelens_h100_vit_infer_1step.json.gz"
B200 = "tracelens_b200_vllm_eager_nosteps.json.gz"
SCHEMA = Path(__file__).resolve().parents[2] / "libreyolo" / "document" / "profile.schema.json"

# (file, gpu_util, tensorcore_pct, num_steps, mode, bound)
EXPECTED = [
    (A100, 0.236, 23.8, 3, "training", "host / launch"),
    (V100, 0.974, 0.0, 5, "training", "compute"),
    (H100, 0.155, 78.3, 1, "inference", "host / launch"),
    (B200, 0.133, 59.7, 0, "inference", "host / launch"),
]


@pytest.fixture(scope="module")
def traced(request: pytest.FixtureRequest) -> dict[str, object]:
    folder = fixture_dir("gpu_traces")
    return {name: open_profile(str(folder / name)) for name, *_ in EXPECTED}


@pytest.mark.parametrize(("name", "util", "tc_pct", "steps", "mode", "bound"), EXPECTED)
def test_gpu_trace_headline_metrics(traced, name, util, tc_pct, steps, mode, bound) -> None:
    profile = traced[name]
    assert profile.metrics["gpu_util"] == pytest.approx(util, abs=0.01)
    assert profile.metrics["tensorcore_pct"] == pytest.approx(tc_pct, abs=2.0)
    assert profile.trace.num_steps == steps
    assert profile.run.mode == mode
    assert profile.metrics["bound"] == bound == profile.verdict.bound


def test_a100_launches_and_phases(traced) -> None:
    profile = traced[A100]
    assert profile.metrics["launches_per_step"] == 900
    assert profile.metrics["kernels_per_step"] == 900
    assert profile.metrics["tensorcore_pct"] == pytest.approx(23.8, abs=1.0)
    for phase in ("forward", "backward", "optimizer"):
        assert profile.metrics[f"{phase}_gpu_ms"] > 0
    assert profile.metrics["host_us_per_launch"] > 0


@pytest.mark.parametrize("name", [row[0] for row in EXPECTED])
def test_a_bare_trace_reads_step_busy_and_util_on_one_window(traced, name) -> None:
    m = traced[name].metrics
    assert m["gpu_util"] == pytest.approx(m["gpu_busy_ms"] / m["step_ms"], abs=0.001)


def test_v100_step_busy_util_memcpy_and_kernel_mix_agree(traced) -> None:
    # The CPU runs ahead (steps of 35-96 ms) of 93.6 ms of kernels per step: every number is
    # read on the device-side window, 483.5 ms for 5 steps (the CPU-side one is 394.3 ms).
    summary = summarize(traced[V100])
    m = summary.metrics
    assert (m["step_ms"], m["gpu_busy_ms"], m["gpu_util"]) == (96.7, 94.49, 0.977)
    assert m["memcpy_ms"] == 0.858
    assert m["host_overhead_ms"] == pytest.approx(96.7 - 94.49, abs=0.01)
    # One stream: the kernel mix (sums of durations) adds up to the busy union.
    assert sum(c.ms_per_step for c in summary.categories) == pytest.approx(94.49, abs=0.05)
    memcpy = next(c for c in summary.categories if c.name == "memcpy")
    assert memcpy.ms_per_step == pytest.approx(m["memcpy_ms"], abs=0.01)


def test_v100_launches_per_step(traced) -> None:
    assert traced[V100].metrics["launches_per_step"] == 870


def test_h100_peak_memory_from_memory_events(traced) -> None:
    assert traced[H100].metrics["peak_vram_mb"] == pytest.approx(231.3, abs=0.1)


def test_summary_flags_the_evidence_and_levers(traced) -> None:
    summary = summarize(traced[A100])
    assert summary.verdict.evidence["gpu_util"] == pytest.approx(0.236, abs=0.01)
    assert summary.verdict.levers
    assert summary.categories and summary.top_kernels
    assert sum(c.share for c in summary.categories) == pytest.approx(1.0)


def test_what_if_host_bound_saves_launch_cost(traced) -> None:
    profile = traced[A100]
    result = project(profile, launches=100)
    cost_ms = profile.trace.launches.host_us_per_launch / 1000
    assert result.regime == "host / launch"
    assert result.projected_step_ms == pytest.approx(
        profile.metrics["step_ms"] - 100 * cost_ms, abs=0.06
    )
    assert result.caveat


def test_what_if_compute_bound_removes_gpu_time(traced) -> None:
    profile = traced[V100]
    result = project(profile, category="gemm")
    assert result.regime == "compute"
    assert result.removed_gpu_ms > 0
    assert result.projected_step_ms == pytest.approx(
        profile.metrics["step_ms"] - result.removed_gpu_ms, abs=0.06
    )


def test_compare_two_traces_without_trials_makes_no_significance_call(traced) -> None:
    result = compare(traced[A100], traced[V100])
    assert result.significance.significant is None
    assert result.gpu_util.before == traced[A100].metrics["gpu_util"]


@pytest.mark.parametrize("name", [row[0] for row in EXPECTED])
def test_profile_from_trace_saves_valid_and_round_trips(traced, name, tmp_path: Path) -> None:
    profile = traced[name]
    path = save(profile, tmp_path / "profile.json")
    jsonschema.validate(json.loads(path.read_text()), json.loads(SCHEMA.read_text()))
    assert to_builtins(load(str(path))) == to_builtins(profile)
