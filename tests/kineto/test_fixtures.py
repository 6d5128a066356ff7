"""The analyser on four real GPU traces reproduces the reference values of their README."""

from __future__ import annotations

import time

import pytest

from libreyolo.document.model import TraceAnalysis
from libreyolo.kineto import analyse_trace
from tests.kineto.conftest import A100, B200, H100, V100, analysed, fixture_path

# name: (gpu_util, kernel-only util, tensor-core share %, TC tolerance, steps)
REFERENCE = {
    A100: (0.236, 0.233, 23.8, 1.0, 3),
    V100: (0.974, 0.965, 0.0, 0.05, 5),
    H100: (0.155, 0.155, 78.3, 2.0, 1),
    B200: (0.133, 0.123, 59.7, 2.0, 0),
}
LAUNCHES = {
    A100: {"cudaLaunchKernel": 2550, "cudaLaunchKernelExC": 150},
    V100: {"cudaLaunchKernel": 4350},
    H100: {"cudaLaunchKernel": 81, "cuLaunchKernel": 49, "cudaLaunchKernelExC": 24},
    B200: {"cudaLaunchKernel": 367, "cuLaunchKernelEx": 220, "cudaLaunchKernelExC": 180,
           "cuLaunchKernel": 1},
}  # fmt: skip


def _tensor_core_pct(analysis: TraceAnalysis) -> float:
    return analysis.tensor_core_ms / analysis.kernel_sum_ms * 100


@pytest.mark.parametrize("name", list(REFERENCE))
def test_fixture_matches_reference_values(name: str) -> None:
    util, kernel_util, tc_pct, tc_tolerance, num_steps = REFERENCE[name]
    analysis = analysed(name)
    assert analysis.gpu_busy_ms / analysis.window_ms == pytest.approx(util, abs=0.01)
    assert analysis.gpu_kernel_busy_ms / analysis.window_ms == pytest.approx(kernel_util, abs=0.01)
    assert _tensor_core_pct(analysis) == pytest.approx(tc_pct, abs=tc_tolerance)
    assert analysis.num_steps == len(analysis.steps) == num_steps
    assert analysis.has_gpu


@pytest.mark.parametrize("name", list(LAUNCHES))
def test_fixture_counts_launch_calls_per_api(name: str) -> None:
    launches = analysed(name).launches
    assert launches.by_api == LAUNCHES[name]
    assert launches.num_launches == sum(LAUNCHES[name].values())
    assert launches.host_us_per_launch is not None and launches.host_us_per_launch > 0


@pytest.mark.parametrize(("name", "per_step"), [(A100, 900), (V100, 870)])
def test_training_fixture_launches_the_same_work_every_step(name: str, per_step: int) -> None:
    for step in analysed(name).steps:
        assert step.num_launches == step.num_kernels == per_step
        assert step.gpu_span_ms is not None and step.gpu_span_ms >= step.cpu_ms


def test_a100_steps_come_from_the_cpu_side_profiler_steps() -> None:
    analysis = analysed(A100)
    assert [step.index for step in analysis.steps] == [4, 5, 6]
    assert analysis.source == "profiler_steps"
    assert analysis.kernel_sum_ms == pytest.approx(162.5, abs=0.1)
    assert analysis.num_kernels == 2700


def test_a100_phases_follow_the_launching_calls() -> None:
    phases = {phase.name: phase for phase in analysed(A100).phases}
    assert [name for name in phases] == ["forward", "backward", "optimizer"]
    for phase in phases.values():
        assert phase.gpu_ms > 0 and phase.num_kernels > 0 and phase.num_ops > 0
        assert phase.cpu_ms is not None and phase.cpu_ms > 0
    # Backward kernels are launched by the autograd engine thread, outside any labelled range.
    assert phases["backward"].gpu_ms > phases["forward"].gpu_ms
    assert sum(phase.num_kernels for phase in phases.values()) == 2700


def test_a100_categories_of_real_kernels() -> None:
    analysis = analysed(A100)
    categories = {category.name: category for category in analysis.categories}
    kernels = {kernel.name: kernel for kernel in analysis.kernels}
    nccl = kernels["ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"]
    assert nccl.category == "communication" and not nccl.tensor_core
    assert set(nccl.phases) == {"backward"}
    assert categories["communication"].total_ms / analysis.kernel_sum_ms == pytest.approx(
        0.29, abs=0.01
    )
    layout = next(k for k in analysis.kernels if "nchwToNhwcKernel" in k.name)
    assert layout.category == "layout / copy"
    assert layout.total_ms == pytest.approx(12.6, abs=0.05)
    assert all(k.category == "norm" for k in analysis.kernels if "bn_fw" in k.name)
    assert categories["memcpy"].num_kernels == 960 + 114
    totals = [category.total_ms for category in analysis.categories]
    assert totals == sorted(totals, reverse=True)


def test_a100_mangled_cutlass_convolutions_run_on_tensor_cores() -> None:
    mangled = [k for k in analysed(A100).kernels if k.name.startswith("_ZN19cutlass_cudnn_train")]
    assert len(mangled) == 2
    assert all(k.tensor_core and k.category == "gemm / conv" for k in mangled)


def test_v100_ns_trace_keeps_microsecond_timestamps() -> None:
    analysis = analysed(V100)
    assert analysis.time_unit == "ns"
    assert [round(step.cpu_ms) for step in analysis.steps] == [35, 72, 96, 96, 96]
    assert analysis.window_ms == pytest.approx(394.28, abs=0.01)
    assert analysis.tensor_core_ms == 0.0
    # The CPU runs ahead: each step's GPU work ends long after its CPU range.
    assert all((step.gpu_span_ms or 0.0) > step.cpu_ms for step in analysis.steps)


def test_h100_duplicate_profiler_step_counts_once_and_memory_peaks() -> None:
    analysis = analysed(H100)
    assert [step.index for step in analysis.steps] == [6]
    assert analysis.memory.peak_allocated_bytes == 231_332_864
    assert analysis.memory.peak_reserved_bytes == 245_366_784
    flash = next(k for k in analysis.kernels if "flash_fwd_kernel" in k.name)
    assert flash.category == "attention" and flash.tensor_core
    assert analysis.attention_ms == pytest.approx(flash.total_ms)
    assert analysis.devices[0].name == "NVIDIA H100 80GB HBM3"
    assert analysis.devices[0].num_sms == 132


def test_b200_without_steps_is_one_whole_trace_window() -> None:
    analysis = analysed(B200)
    assert analysis.source == "whole_trace"
    assert analysis.steps == []
    assert analysis.window_ms == pytest.approx(87.41, abs=0.01)
    assert any("no ProfilerStep" in note for note in analysis.notes)
    kernels = {kernel.name: kernel for kernel in analysis.kernels}
    cache = next(name for name in kernels if "reshape_and_cache_flash_kernel" in name)
    assert kernels[cache].category != "attention" and not kernels[cache].tensor_core
    quant = next(name for name in kernels if "scaled_fp8_quant" in name)
    assert not kernels[quant].tensor_core
    assert next(k for k in analysis.kernels if "multimem_all_reduce" in k.name).category == (
        "communication"
    )


def test_parallel_reading_gives_the_same_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    path = fixture_path(V100)
    monkeypatch.setattr("libreyolo.kineto.source.CHUNK_BYTES", 1 << 20)
    monkeypatch.setattr("libreyolo.kineto.source.PARALLEL_MIN_BYTES", 3 << 20)
    assert analyse_trace(path, workers=3) == analyse_trace(path, workers=1) == analysed(V100)


def test_a100_fixture_is_analysed_in_well_under_a_few_seconds() -> None:
    path = fixture_path(A100)
    start = time.perf_counter()
    analyse_trace(path, workers=1)
    assert time.perf_counter() - start < 2.0  # about 0.15 s on a 2-core VM; slack for CI load
