"""The spooled, streamed op sweep equals the whole-column reduction, in order or not.

The reference keeps every cpu_op and call in memory and sorts the ops (`read_trace` without a
spool, then `reduce_trace`); the analyser spools both to disk, sweeps the ops once per thread and
reads the calls back block by block. Blocks of a few ops and calls make every thread's stack, its
pending launch calls and the correlation join cross block boundaries. A trace
whose equal starts come shortest first is reordered as it streams; one whose ops go back in
time takes the sorted path. Both must give the same document.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from libreyolo.document.model import TraceAnalysis
from libreyolo.errors import AnalysisError
from libreyolo.kineto import analyse_trace, reduce
from libreyolo.kineto.attribution import is_engine_op, shapes_ranges
from libreyolo.kineto.events import read_trace
from libreyolo.kineto.reduce import reduce_trace
from tests.kineto.conftest import A100, B200, H100, V100, event, fixture_path, kernel, launch

ENGINE_OP = "autograd::engine::evaluate_function: MmBackward0"


def _reference(path: Path) -> TraceAnalysis:
    """The analysis with every op in memory, sorted (no spool, no stream)."""
    return reduce_trace(read_trace(path, workers=1))


@pytest.fixture
def sorts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Blocks of 7 ops and 7 calls; the list records each whole-column sort the analyser
    falls back to."""
    monkeypatch.setattr("libreyolo.kineto.spool.BLOCK_OPS", 7)
    calls: list[int] = []
    real = reduce.nesting_order

    def counted(*args: Any) -> list[int]:
        calls.append(len(args[0]))
        return real(*args)

    monkeypatch.setattr("libreyolo.kineto.reduce.nesting_order", counted)
    return calls


def _ops(tid: int, base: float, corr: int) -> list[dict[str, Any]]:
    """One step's ops on a thread: a parent, four children that launch a kernel each, each
    with a shorter op that starts with it and holds a nested one (tid 2: the autograd
    engine's)."""
    ops = [event("cpu_op", "aten::body", base + 1, 800.0, tid=tid)]
    for k in range(4):
        start = base + 10 + 150 * k
        inner = ENGINE_OP if tid == 2 and k == 3 else "aten::inner"
        ops += [
            event("cpu_op", f"aten::op{k}", start, 100.0, tid=tid),
            event("cpu_op", "aten::same_start", start, 40.0, tid=tid),
            event("cpu_op", inner, start + 5, 20.0, tid=tid),
            launch(start + 10, corr + k, tid=tid),
        ]
    return ops


def _trace(variant: str) -> dict[str, Any]:
    """Three steps on two threads (tid 1 holds the phase ranges); the kernels come first in the
    file and the ProfilerStep annotations last, after everything they hold."""
    cpu: list[dict[str, Any]] = []
    gpu: list[dict[str, Any]] = []
    for step in range(3):
        base = 1000.0 * step
        cpu.append(event("user_annotation", "step/forward", base, 400.0))
        cpu.append(event("user_annotation", "step/backward", base + 400, 400.0))
        for tid in (1, 2):
            corr = 100 * step + 10 * tid
            ops = _ops(tid, base, corr)
            if variant == "backwards" and step == 1 and tid == 2:
                ops.reverse()
            if variant == "longer second" and step == 2:
                ops.insert(2, event("cpu_op", "aten::wrapper", base + 10, 120.0, tid=tid))
            cpu += ops
            gpu += [kernel(f"k{k}", base + 200 + 150 * k, 30.0, corr + k) for k in range(4)]
    steps = [event("user_annotation", f"ProfilerStep#{s}", 1000.0 * s, 900.0) for s in range(3)]
    return {"traceEvents": gpu + cpu + steps}


def test_ops_in_order_are_swept_in_tiny_blocks_with_no_sort(
    sorts: list[int], write_trace: Callable[..., Path]
) -> None:
    path = write_trace(_trace("in order"))
    expected = _reference(path)
    del sorts[:]
    assert analyse_trace(path, workers=1) == expected
    assert sorts == []  # streamed: no whole-column sort
    assert expected.num_steps == 3 and expected.num_kernels == 24
    by_name = {op.name: op for op in expected.ops}
    assert set(by_name[ENGINE_OP].phases) == {"backward"}  # the engine's thread is backward's
    op0 = by_name["aten::op0"]  # 100 µs less its same-start child's 40, on 2 threads x 3 steps
    assert (op0.self_ms, op0.num_calls) == (0.36, 6)
    assert {phase: stat.num_calls for phase, stat in op0.phases.items()} == {
        "forward": 3,  # tid 1, inside step/forward
        "backward": 3,  # tid 2: no ranges, runs the engine's op
    }
    # launched 10 µs in: inside the nested op (k3: tid 2's is the engine's, a tie by name)
    assert {k.name: k.op for k in expected.kernels} == {f"k{k}": "aten::inner" for k in range(4)}


def test_equal_starts_shortest_first_are_reordered_not_sorted(
    sorts: list[int], write_trace: Callable[..., Path]
) -> None:
    path = write_trace(_trace("longer second"))
    expected = _reference(path)
    del sorts[:]
    assert analyse_trace(path, workers=1) == expected
    assert sorts == []
    wrapper = next(op for op in expected.ops if op.name == "aten::wrapper")
    assert (wrapper.self_ms, wrapper.total_ms) == (0.04, 0.24)  # 120 µs holding op0's 100


def test_ops_back_in_time_take_the_sorted_path(
    sorts: list[int], write_trace: Callable[..., Path]
) -> None:
    trace = _trace("backwards")
    path = write_trace(trace)
    expected = _reference(path)
    del sorts[:]
    assert analyse_trace(path, workers=1) == expected
    assert sorts == [sum(1 for e in trace["traceEvents"] if e["cat"] == "cpu_op")]


@pytest.mark.parametrize("name", [A100, H100, B200, V100])
def test_real_traces_equal_the_whole_column_reduction(name: str, sorts: list[int]) -> None:
    path = fixture_path(name)
    expected = _reference(path)
    del sorts[:]
    assert analyse_trace(path, workers=1) == expected
    assert sorts == []  # the V100's ns ties come shortest first: reordered, not sorted


def test_the_spool_keeps_only_range_ops_in_memory(write_trace: Callable[..., Path]) -> None:
    path = write_trace(_trace("in order"))
    trace = read_trace(path, workers=1, spool_ops=(shapes_ranges, is_engine_op))
    assert trace.spool is not None
    try:
        assert trace.num_ops == trace.spool.count == 3 * 2 * 13
        assert len(trace.ops) == 0  # the ranges here are annotations, not cpu_ops
        assert {trace.threads[t] for t in trace.spool.marked_threads} == {(1, 2)}
        assert len(trace) == trace.num_ops + 9 + 24 + 24  # annotations, calls, kernels
    finally:
        trace.spool.close()


def test_a_spool_that_cannot_be_written_is_one_analysis_error(
    monkeypatch: pytest.MonkeyPatch, write_trace: Callable[..., Path]
) -> None:
    path = write_trace(_trace("in order"))

    def full(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("libreyolo.kineto.spool.tempfile.TemporaryFile", full)
    with pytest.raises(AnalysisError) as caught:
        analyse_trace(path, workers=1)
    assert str(caught.value) == (
        f"failed to analyse {path}: cannot spool its ops to a temporary file "
        "(No space left on device)"
    )
    assert caught.value.hint == "point TMPDIR at a directory with free space"


def test_calls_wait_on_disk_and_only_launching_ones_come_back(
    sorts: list[int], write_trace: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("libreyolo.kineto.source.CHUNK_BYTES", 512)  # a few events a run
    trace = _trace("in order")
    trace["traceEvents"].append(event("cuda_runtime", "cudaStreamSynchronize", 2950.0, 5.0))
    path = write_trace(trace)
    events = read_trace(path, workers=1, spool_ops=(shapes_ranges, is_engine_op))
    try:
        assert len(events.calls) == 0 and events.num_calls == 25  # 24 launches and a sync
        assert events.call_spool is not None
        sizes = [len(block) for block in events.call_spool.blocks()]
        assert len(sizes) > 2 and sum(sizes) == 25
        assert events.call_spool.bounds() == (20.0, 2955.0)
        launcher, launching, _ = reduce._launchers(events)
        assert len(launching) == 24 and -1 not in launcher  # one per kernel, the sync is gone
    finally:
        events.close()
    assert analyse_trace(path, workers=1) == _reference(path)
