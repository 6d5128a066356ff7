"""Helpers for the trace analyser tests: the real GPU fixtures and synthetic trace files."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from libreyolo.document.model import TraceAnalysis
from libreyolo.kineto import analyse_trace
from tests.fixture_files import fixture_dir, fixture_file

GPU_TRACES = fixture_dir("gpu_traces")
A100 = "hta_a100_ddp_train_3steps.json.gz"
V100 = "hta_v100_ddp_train_5steps_ns.json.gz"
H100 = "tracelens_h100_vit_infer_1step.json.gz"
B200 = "tracelens_b200_vllm_eager_nosteps.json.gz"


def fixture_path(name: str) -> Path:
    """A real GPU trace from tests/fixtures/gpu_traces."""
    return fixture_file(f"gpu_traces/{name}")


@cache
def _analysed(name: str) -> TraceAnalysis:
    return analyse_trace(GPU_TRACES / name)


def analysed(name: str) -> TraceAnalysis:
    """The analysis of a real GPU trace, computed once per test session."""
    fixture_path(name)
    return _analysed(name)


def event(cat: str, name: str, ts: float, dur: float, **fields: Any) -> dict[str, Any]:
    """A complete ("X") event on pid 1, tid 1 unless given; extra keys go to `args`."""
    pid, tid = fields.pop("pid", 1), fields.pop("tid", 1)
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": fields,
    }


def kernel(name: str, ts: float, dur: float, corr: int, **fields: Any) -> dict[str, Any]:
    """A GPU kernel on device 0, stream 7, launched by the call with correlation `corr`."""
    return event(
        "kernel",
        name,
        ts,
        dur,
        pid=0,
        tid=fields.pop("stream", 7),
        device=0,
        correlation=corr,
        **fields,
    )


def launch(ts: float, corr: int, name: str = "cudaLaunchKernel", **fields: Any) -> dict[str, Any]:
    """A runtime launch call of 5 µs."""
    return event("cuda_runtime", name, ts, fields.pop("dur", 5.0), correlation=corr, **fields)


@pytest.fixture
def write_trace(tmp_path: Path) -> Callable[..., Path]:
    """Write a trace document (or any JSON value) to a file; `.gz` names are gzipped."""

    def write(content: Any, name: str = "trace.json") -> Path:
        path = tmp_path / name
        text = content if isinstance(content, str | bytes) else json.dumps(content)
        data = text.encode() if isinstance(text, str) else text
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        return path

    return write
