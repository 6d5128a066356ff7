"""The reduction on small synthetic traces: windows, unions, attribution, ops, launches, memory."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from libreyolo.document.model import TraceAnalysis
from libreyolo.kineto import analyse_trace
from libreyolo.kineto.reduce import _median
from tests.kineto.conftest import event, kernel, launch

Writer = Callable[..., Path]


def _analyse(write_trace: Writer, events: list[dict[str, Any]], **top: Any) -> TraceAnalysis:
    return analyse_trace(write_trace({"traceEvents": events, **top}), workers=1)


def _step(number: int, start: float, dur: float, **fields: Any) -> dict[str, Any]:
    return event("user_annotation", f"ProfilerStep#{number}", start, dur, **fields)


def _phases(analysis: TraceAnalysis) -> dict[str, Any]:
    return {phase.name: phase for phase in analysis.phases}


def test_steps_come_from_cpu_annotations_not_their_gpu_copies(write_trace: Writer) -> None:
    events = [
        _step(7, 100.0, 50.0),
        _step(8, 150.0, 60.0),
        event("gpu_user_annotation", "ProfilerStep#7", 105.0, 40.0, pid=0, tid=7),
        event("gpu_user_annotation", "ProfilerStep#8", 160.0, 45.0, pid=0, tid=7),
        launch(110.0, corr=1),
        kernel("k", 120.0, 10.0, corr=1),
        launch(160.0, corr=2),
        kernel("k", 170.0, 10.0, corr=2),
    ]
    analysis = _analyse(write_trace, events)
    assert analysis.source == "profiler_steps"
    assert [step.index for step in analysis.steps] == [7, 8]
    assert analysis.window_ms == pytest.approx(0.11)
    assert [step.cpu_ms for step in analysis.steps] == [0.05, 0.06]
    assert [step.num_kernels for step in analysis.steps] == [1, 1]
    assert [step.num_launches for step in analysis.steps] == [1, 1]


def test_busy_is_a_union_over_streams_and_never_exceeds_the_window(write_trace: Writer) -> None:
    events = [
        _step(1, 0.0, 100.0),
        launch(1.0, corr=1),
        launch(2.0, corr=2),
        launch(3.0, corr=3, name="cudaMemcpyAsync"),
        kernel("gemm_a", 10.0, 50.0, corr=1, stream=7),
        kernel("gemm_b", 30.0, 50.0, corr=2, stream=8),
        event("gpu_memcpy", "Memcpy DtoD", 85.0, 10.0, pid=0, tid=7, device=0, correlation=3),
        kernel("late", 95.0, 20.0, corr=1, stream=9),  # runs past the window: clipped
    ]
    analysis = _analyse(write_trace, events)
    assert analysis.gpu_busy_ms == pytest.approx(0.085)  # [10, 80] + [85, 100]
    assert analysis.gpu_kernel_busy_ms == pytest.approx(0.075)  # [10, 80] + [95, 100]
    assert analysis.memcpy_ms == pytest.approx(0.01)
    assert analysis.kernel_sum_ms == pytest.approx(0.12)  # a sum: more than the union
    assert analysis.gpu_busy_ms <= analysis.window_ms
    assert analysis.launches.num_launches == 2 and analysis.launches.num_memcpy_calls == 1
    step = analysis.steps[0]
    assert step.gpu_span_ms == pytest.approx(0.115)  # to the end of the last work it launched
    assert step.gpu_busy_ms == pytest.approx(0.1)  # [10, 80] + [85, 95] + [95, 115]
    rows = {row.name: row for row in analysis.categories}
    assert rows["memcpy"].num_kernels == 1 and rows["gemm / conv"].num_kernels == 2


def test_a_lagging_gpu_is_measured_on_the_device_side_window(write_trace: Writer) -> None:
    events = [
        _step(1, 0.0, 100.0),
        launch(10.0, corr=1),
        launch(20.0, corr=2, name="cudaMemcpyAsync"),
        kernel("gemm", 50.0, 100.0, corr=1),  # runs on after the CPU left the step at 100 µs
        event("gpu_memcpy", "Memcpy DtoD", 160.0, 20.0, pid=0, tid=7, device=0, correlation=2),
    ]
    analysis = _analyse(write_trace, events)
    assert analysis.window_ms == pytest.approx(0.1)  # the CPU side
    assert analysis.device_window_ms == pytest.approx(0.18)  # to the copy's end
    assert analysis.device_busy_ms == pytest.approx(0.12)  # [50, 150] + [160, 180]
    assert analysis.memcpy_ms == pytest.approx(0.02)  # the whole copy, not the CPU-side 0


def test_kernels_take_the_phase_of_their_launching_call(write_trace: Writer) -> None:
    events = [
        _step(1, 0.0, 1000.0),
        event("user_annotation", "step/forward", 0.0, 100.0),
        event("user_annotation", "step/backward", 100.0, 800.0),
        launch(50.0, corr=1),  # forward, on the thread that holds the ranges
        launch(150.0, corr=2),  # backward
        launch(60.0, corr=3, tid=2),  # another thread at forward time, outside any range
        kernel("fwd_kernel", 500.0, 10.0, corr=1),  # runs while the CPU is in backward
        kernel("bwd_kernel", 600.0, 10.0, corr=2),
        kernel("other_kernel", 70.0, 10.0, corr=3),  # runs inside forward's CPU range
    ]
    analysis = _analyse(write_trace, events)
    kernels = {k.name: k for k in analysis.kernels}
    assert set(kernels["fwd_kernel"].phases) == {"forward"}
    assert set(kernels["bwd_kernel"].phases) == {"backward"}
    assert set(kernels["other_kernel"].phases) == {"unphased"}
    phases = _phases(analysis)
    assert list(phases) == ["forward", "backward", "unphased"]
    assert phases["forward"].gpu_ms == pytest.approx(0.01) and phases["forward"].num_kernels == 1
    assert phases["forward"].cpu_ms == pytest.approx(0.1)
    assert phases["unphased"].cpu_ms is None


def test_autograd_engine_threads_launch_backward_work(write_trace: Writer) -> None:
    events = [
        _step(1, 0.0, 1000.0),
        event("user_annotation", "## forward ##", 0.0, 300.0),
        event("cpu_op", "autograd::engine::evaluate_function: MulBackward0", 400.0, 50.0, tid=2),
        event("cpu_op", "aten::mul", 410.0, 20.0, tid=2),
        launch(420.0, corr=1, tid=2),
        kernel("mul_backward", 430.0, 5.0, corr=1),
    ]
    analysis = _analyse(write_trace, events)
    assert set(analysis.kernels[0].phases) == {"backward"}
    phases = _phases(analysis)
    assert phases["backward"].num_ops == 2 and phases["backward"].cpu_ms is None
    assert "unphased" not in phases


def test_nested_ranges_of_one_phase_are_not_counted_twice(write_trace: Writer) -> None:
    events = [
        _step(1, 0.0, 1000.0),
        event("user_annotation", "## forward ##", 0.0, 400.0),
        event("user_annotation", "DistributedDataParallel.forward", 10.0, 380.0),
        event("user_annotation", "Optimizer.step#SGD.step", 500.0, 100.0),
        event("cpu_op", "aten::add", 20.0, 10.0),
        event("cpu_op", "aten::mul", 700.0, 10.0),
    ]
    phases = _phases(_analyse(write_trace, events))
    assert phases["forward"].cpu_ms == pytest.approx(0.4)
    assert phases["optimizer"].cpu_ms == pytest.approx(0.1)
    assert phases["forward"].num_ops == 1 and phases["unphased"].num_ops == 1
    assert phases["optimizer"].num_ops == 0


def test_op_self_time_subtracts_direct_children(write_trace: Writer) -> None:
    events = [
        _step(1, 0.0, 200.0),
        event("cpu_op", "aten::conv2d", 0.0, 100.0),
        event("cpu_op", "aten::convolution", 10.0, 80.0),
        event("cpu_op", "aten::_convolution", 20.0, 60.0),
        # A child of ns resolution that ends 0.3 µs after its parent still nests in it.
        event("cpu_op", "aten::empty", 79.0, 1.3),
        event("cpu_op", "aten::add", 100.0, 10.0),
        event("cpu_op", "aten::add", 120.0, 10.0),
        event("cpu_op", "aten::conv2d", 0.0, 100.0, tid=2),  # another thread: no nesting across
    ]
    ops = {op.name: op for op in _analyse(write_trace, events).ops}
    assert ops["aten::conv2d"].total_ms == 0.2  # two calls, one per thread
    assert ops["aten::conv2d"].self_ms == pytest.approx(0.12)
    assert ops["aten::convolution"].self_ms == pytest.approx(0.02)
    assert ops["aten::_convolution"].self_ms == pytest.approx(0.059)
    assert ops["aten::empty"].self_ms == pytest.approx(0.0013)
    assert ops["aten::add"].num_calls == 2 and ops["aten::add"].self_ms == pytest.approx(0.02)
    assert ops["aten::conv2d"].phases["unphased"].self_ms == pytest.approx(0.12)
    assert "ProfilerStep#1" not in ops
    self_ms = [op.self_ms or 0.0 for op in _analyse(write_trace, events).ops]
    assert self_ms == sorted(self_ms, reverse=True)


def test_ns_traces_keep_their_microsecond_timestamps(write_trace: Writer) -> None:
    start = 1712195495519689.0
    events = [_step(101, start, 1000.5), launch(start + 1, corr=1), kernel("k", start + 2, 0.5, 1)]
    analysis = _analyse(write_trace, events, displayTimeUnit="ns")
    assert analysis.time_unit == "ns"
    assert analysis.window_ms == pytest.approx(1.0005)
    assert analysis.steps[0].start_us == start
    assert analysis.kernel_sum_ms == pytest.approx(0.0005)


def test_without_profiler_steps_the_whole_trace_is_the_window(write_trace: Writer) -> None:
    events = [
        event("user_annotation", "execute_context", 100.0, 400.0),
        event("python_function", "outside.py(1): f", 0.0, 1000.0),  # not read
        launch(150.0, corr=1),
        kernel("k", 550.0, 50.0, corr=1),
    ]
    analysis = _analyse(write_trace, events)
    assert (analysis.source, analysis.num_steps, analysis.steps) == ("whole_trace", 0, [])
    assert analysis.window_ms == pytest.approx(0.5)  # 100 µs to the kernel's end at 600 µs
    assert analysis.gpu_busy_ms == pytest.approx(0.05)
    assert analysis.notes == ["no ProfilerStep: the whole trace is one window"]


def test_launch_and_allocator_calls_inside_the_window(write_trace: Writer) -> None:
    events = [_step(1, 0.0, 100.0), _step(2, 100.0, 100.0)]
    for i in range(6):
        events.append(event("cuda_runtime", "cudaMalloc", 10.0 + i, 1.0))
        events.append(event("cuda_driver", "cuMemFree_v2", 110.0 + i, 1.0))
    events += [
        launch(20.0, corr=1, name="cudaLaunchKernel_v7000", dur=2.0),
        launch(30.0, corr=2, name="cuLaunchKernel", dur=4.0),
        launch(40.0, corr=3, name="cudaLaunchKernelExC", dur=9.0),
        launch(150.0, corr=4, name="cudaGraphLaunch", dur=6.0),
        launch(500.0, corr=5, dur=1.0),  # after the window
        event("cuda_runtime", "cudaMemsetAsync", 60.0, 1.0, correlation=6),
        event("cuda_runtime", "cudaMallocAsync", 70.0, 1.0),
    ]
    events += [kernel(f"k{i}", 50.0 + 10 * i, 5.0, corr=i) for i in range(1, 5)]
    analysis = _analyse(write_trace, events)
    launches = analysis.launches
    assert launches.by_api == {
        "cuLaunchKernel": 1, "cudaGraphLaunch": 1, "cudaLaunchKernel": 1, "cudaLaunchKernelExC": 1
    }  # fmt: skip
    assert launches.num_launches == 4 and launches.num_memcpy_calls == 1
    assert launches.host_us_per_launch == 5.0
    assert analysis.memory.num_mallocs == 12 and analysis.memory.thrash
    assert [step.num_mallocs for step in analysis.steps] == [6, 6]
    assert [step.num_launches for step in analysis.steps] == [3, 1]


def test_memory_peaks_come_from_cuda_samples_in_the_window(write_trace: Writer) -> None:
    def sample(ts: float, allocated: int, device_type: int = 1) -> dict[str, Any]:
        return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1,
                "ts": ts, "args": {"Total Allocated": allocated, "Total Reserved": 2 * allocated,
                                   "Device Type": device_type}}  # fmt: skip

    events = [_step(1, 100.0, 100.0), sample(50.0, 900), sample(120.0, 300), sample(150.0, 500),
              sample(160.0, 700, device_type=0), sample(250.0, 800)]  # fmt: skip
    memory = _analyse(write_trace, events).memory
    assert (memory.peak_allocated_bytes, memory.peak_reserved_bytes) == (500, 1000)
    assert memory.num_mallocs == 0 and not memory.thrash


def test_trailing_steps_without_gpu_work_are_dropped(write_trace: Writer) -> None:
    events = [_step(1, 0.0, 100.0), _step(2, 100.0, 100.0), _step(3, 200.0, 100.0)]
    events += [launch(50.0, corr=1), kernel("k", 60.0, 10.0, corr=1)]
    events += [launch(150.0, corr=2), kernel("k", 160.0, 10.0, corr=2)]
    analysis = _analyse(write_trace, events)
    assert [step.index for step in analysis.steps] == [1, 2]
    assert analysis.window_ms == pytest.approx(0.2)
    assert analysis.notes == ["step 3 dropped: it launched no GPU work"]


def test_a_cpu_only_trace_has_no_gpu_figures(write_trace: Writer) -> None:
    events = [_step(1, 0.0, 100.0), _step(2, 100.0, 100.0), event("cpu_op", "aten::add", 5.0, 5.0)]
    analysis = _analyse(write_trace, events)
    assert not analysis.has_gpu
    assert (analysis.gpu_busy_ms, analysis.devices, analysis.kernels) == (0.0, [], [])
    assert analysis.categories == [] and analysis.num_steps == 2
    assert all(step.gpu_span_ms is None for step in analysis.steps)
    assert [phase.name for phase in analysis.phases] == ["unphased"]


def test_devices_take_names_from_device_properties(write_trace: Writer) -> None:
    events = [
        _step(1, 0.0, 100.0),
        launch(1.0, corr=1),
        launch(2.0, corr=2),
        kernel("small", 10.0, 5.0, corr=1),
        {**kernel("big", 10.0, 50.0, corr=2), "pid": 1} | {"args": {"device": 1, "correlation": 2}},
    ]
    props = [{"id": 0, "name": "GPU zero", "numSms": 80, "computeMajor": 7},
             {"id": 1, "name": "GPU one", "numSms": 132, "computeMajor": 9}]  # fmt: skip
    analysis = _analyse(write_trace, events, deviceProperties=props)
    assert [(d.id, d.name, d.num_sms) for d in analysis.devices] == [
        (0, "GPU zero", 80), (1, "GPU one", 132)
    ]  # fmt: skip
    assert analysis.gpu_busy_ms == pytest.approx(0.05)  # the busier device is the primary one
    assert analysis.devices[0].busy_ms == pytest.approx(0.005)


def test_kernel_table_is_sorted_and_ties_break_by_name(write_trace: Writer) -> None:
    events = [_step(1, 0.0, 100.0)]
    for i, (name, dur) in enumerate([("b", 5.0), ("a", 5.0), ("c", 9.0), ("a", 1.0)]):
        events += [launch(float(i), corr=i + 1), kernel(name, 10.0 + 10 * i, dur, corr=i + 1)]
    kernels = _analyse(write_trace, events).kernels
    assert [(k.name, k.total_ms, k.num_calls) for k in kernels] == [
        ("c", 0.009, 1), ("a", 0.006, 2), ("b", 0.005, 1)
    ]  # fmt: skip


def test_the_training_loop_thread_is_never_an_autograd_thread(write_trace: Writer) -> None:
    # On CPU the autograd engine runs on the loop's own thread, the one holding ProfilerStep.
    events = [
        _step(1, 0.0, 1000.0),
        event("cpu_op", "autograd::engine::evaluate_function: MulBackward0", 400.0, 50.0),
        event("cpu_op", "aten::add", 600.0, 10.0),
    ]
    assert list(_phases(_analyse(write_trace, events))) == ["unphased"]


@pytest.mark.parametrize(
    ("values", "median"),
    [([5.0, 1.0, 4.0, 2.0, 3.0], 3.0), ([4.0, 1.0, 3.5, 2.0], 2.75), ([7.0], 7.0)],
)
def test_the_median_of_runs_merged_is_the_median(
    values: list[float], median: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("libreyolo.kineto.intervals.SORT_RUN", 2)  # runs of two, merged
    assert _median(array("d", values)) == median
    assert _median(array("d")) is None
