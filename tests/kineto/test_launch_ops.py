"""The op that launched each kernel: the innermost cpu_op around its launch call, per thread."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from libreyolo.kineto import analyse_trace
from tests.kineto.conftest import A100, B200, H100, V100, analysed, event, kernel, launch

CONV_KERNEL = re.compile(r"fprop|dgrad|wgrad|scudnn|winograd|ImplicitGemmConvolution")


def _ops(write_trace: Callable[..., Path], events: list[dict[str, Any]]) -> dict[str, Any]:
    analysis = analyse_trace(write_trace({"traceEvents": events}), workers=1)
    return {k.name: k.op for k in analysis.kernels}


def test_a_kernel_takes_the_innermost_op_around_its_launch(write_trace) -> None:
    events = [
        event("cpu_op", "aten::conv2d", 0.0, 100.0),
        event("cpu_op", "aten::convolution", 1.0, 98.0),
        event("cpu_op", "aten::empty", 2.0, 3.0),  # a child that ended before the launch
        event("cpu_op", "aten::cudnn_convolution", 6.0, 90.0),
        launch(10.0, corr=1),
        event("cpu_op", "aten::add_", 100.0, 20.0),
        launch(110.0, corr=2),
        launch(130.0, corr=3),  # outside every op
        kernel("conv", 200.0, 10.0, corr=1),
        kernel("add", 220.0, 10.0, corr=2),
        kernel("orphan", 240.0, 10.0, corr=3),
    ]
    assert _ops(write_trace, events) == {
        "conv": "aten::cudnn_convolution",
        "add": "aten::add_",
        "orphan": None,
    }


def test_ops_on_another_thread_never_enclose_a_launch(write_trace) -> None:
    events = [
        event("cpu_op", "aten::mm", 0.0, 100.0, tid=2),
        event("cpu_op", "aten::add_", 0.0, 100.0, tid=9),
        launch(10.0, corr=1, tid=2),
        launch(20.0, corr=2, tid=5),
        kernel("gemm", 200.0, 10.0, corr=1),
        kernel("other", 220.0, 10.0, corr=2),
    ]
    assert _ops(write_trace, events) == {"gemm": "aten::mm", "other": None}


def test_kernels_with_no_launching_call_have_no_op(write_trace) -> None:
    events = [
        event("cpu_op", "aten::mm", 0.0, 100.0),
        launch(10.0, corr=1),
        kernel("gemm", 200.0, 10.0, corr=7),  # its call was not recorded
        kernel("copy", 220.0, 10.0, corr=-1),
    ]
    assert _ops(write_trace, events) == {"gemm": None, "copy": None}


def test_a_kernel_keeps_the_op_that_launched_most_of_its_time(write_trace) -> None:
    events = [
        event("cpu_op", "aten::mm", 0.0, 20.0),
        launch(5.0, corr=1),
        event("cpu_op", "aten::addmm", 30.0, 20.0),
        launch(35.0, corr=2),
        launch(40.0, corr=3),
        kernel("gemm", 100.0, 30.0, corr=1),
        kernel("gemm", 140.0, 20.0, corr=2),
        kernel("gemm", 170.0, 20.0, corr=3),
    ]
    assert _ops(write_trace, events) == {"gemm": "aten::addmm"}


@pytest.mark.parametrize("name", [A100, V100, H100, B200])
def test_most_kernel_time_on_the_gpu_fixtures_has_an_op(name: str) -> None:
    kernels = analysed(name).kernels
    with_op = sum(k.total_ms for k in kernels if k.op)
    assert with_op >= 0.8 * sum(k.total_ms for k in kernels)


@pytest.mark.parametrize("name", [A100, V100])
def test_convolution_kernels_are_launched_by_convolution_ops(name: str) -> None:
    conv = [k for k in analysed(name).kernels if CONV_KERNEL.search(k.name)]
    assert len(conv) >= 5
    assert all(k.op and "convolution" in k.op for k in conv), [(k.name, k.op) for k in conv]
