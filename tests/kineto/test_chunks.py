"""Streaming reads: every layout of a trace decodes to the same columns, wherever the cuts fall."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from libreyolo.kineto import events
from libreyolo.kineto.events import TraceEvents, read_trace
from tests.kineto.conftest import event, kernel, launch

# Names that look like event boundaries or the end of the array, and escapes.
TRICKY = ["a},{b", 'quote"}, {"ph": "X"', "end}]", "back\\slash}", "brace{[", "plain"]


def _events(count: int, tricky_every: int = 1) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for i in range(count):
        name = TRICKY[i % len(TRICKY)] if i % tricky_every == 0 else "plain"
        events.append(event("cpu_op", f"op {name}", 10.0 * i, 4.0, tid=1 + i % 2))
        events.append(launch(10.0 * i + 1, corr=i))
        events.append(kernel(f"k{i % 3}", 10.0 * i + 2, 3.0, corr=i, grid=[{"x": 1}, {"y": 2}]))
        events.append({"ph": "s", "id": i, "pid": 1, "tid": 1, "ts": 10.0 * i, "cat": "ac2g"})
    return events


def _names(columns: Any, trace: TraceEvents) -> list[str]:
    return [trace.names[i] for i in columns.name]


def _canonical(trace: TraceEvents) -> dict[str, Any]:
    """The columns with names and threads spelled out (ids depend on interning order)."""
    result: dict[str, Any] = {"devices": trace.devices, "complete": len(trace)}
    for label in ("ops", "ranges", "calls", "gpu"):
        columns = getattr(trace, label)
        threads = [trace.threads[i] for i in columns.thread]
        rest = (columns.ts, columns.dur, columns.corr, columns.device, columns.kind)
        result[label] = (_names(columns, trace), threads, *map(list, rest))
    return result


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("libreyolo.kineto.source.CHUNK_BYTES", 300)
    monkeypatch.setattr("libreyolo.kineto.source.PARALLEL_MIN_BYTES", 3 * 300)


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("workers", [1, 2])
def test_cuts_inside_strings_and_nested_objects_lose_nothing(
    workers: int, write_trace: Callable[..., Path]
) -> None:
    events = _events(120)
    path = write_trace({"traceEvents": events, "displayTimeUnit": "ns"})
    trace = read_trace(path, workers=workers)
    assert _names(trace.ops, trace) == [e["name"] for e in events if e["cat"] == "cpu_op"]
    assert list(trace.calls.corr) == list(range(120))
    assert list(trace.gpu.corr) == list(range(120))
    assert len(trace) == 360
    assert trace.time_unit == "ns"


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("tricky_every", [1, 7, 97])
def test_workers_read_what_one_process_reads(
    tricky_every: int, write_trace: Callable[..., Path]
) -> None:
    path = write_trace({"traceEvents": _events(400, tricky_every)})
    assert _canonical(read_trace(path, workers=3)) == _canonical(read_trace(path, workers=1))


def test_plain_gzip_and_bare_list_read_alike(write_trace: Callable[..., Path]) -> None:
    events = _events(30)
    plain = read_trace(write_trace({"traceEvents": events}), workers=1)
    gzipped = read_trace(write_trace({"traceEvents": events}, "t.json.gz"), workers=1)
    bare = read_trace(write_trace(events, "bare.json"), workers=1)
    assert _canonical(plain) == _canonical(gzipped) == _canonical(bare)


def test_metadata_after_the_events_is_read(write_trace: Callable[..., Path]) -> None:
    props = [{"id": 0, "name": "GPU A", "numSms": 10, "computeMajor": 9}, {"id": 1, "name": "B"}]
    path = write_trace(
        {"traceEvents": _events(5), "deviceProperties": props, "displayTimeUnit": "ns"}
    )
    trace = read_trace(path, workers=1)
    assert trace.devices[0].name == "GPU A" and trace.devices[0].num_sms == 10
    assert trace.devices[0].compute_major == 9 and trace.devices[1].num_sms is None
    assert trace.time_unit == "ns"


@pytest.mark.usefixtures("small_chunks")
def test_a_header_longer_than_a_chunk_is_read(write_trace: Callable[..., Path]) -> None:
    header = {"notes": ["traceEvents", "}, {", "]"] * 100, "nested": {"traceEvents": 1}}
    path = write_trace({**header, "traceEvents": _events(3), "deviceProperties": [{"id": 3}]})
    trace = read_trace(path, workers=1)
    assert len(trace.ops) == 3 and 3 in trace.devices


@pytest.mark.usefixtures("small_chunks")
def test_an_event_longer_than_a_chunk_is_read(write_trace: Callable[..., Path]) -> None:
    events = [*_events(3), event("cpu_op", "x" * 5000, 100.0, 1.0)]
    trace = read_trace(write_trace({"traceEvents": events}), workers=1)
    assert trace.names[trace.ops.name[-1]] == "x" * 5000


def test_byte_order_mark_and_pretty_printing_are_accepted(write_trace: Callable[..., Path]) -> None:
    text = "\ufeff \n" + json.dumps({"traceEvents": _events(4)}, indent=4)
    trace = read_trace(write_trace(text), workers=1)
    assert len(trace.ops) == 4


def test_odd_fields_are_tolerated(write_trace: Callable[..., Path]) -> None:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "no ts", "pid": 1, "tid": 1, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "str ids", "pid": "Spans", "tid": "t", "ts": 5},
        {"ph": "X", "cat": "cpu_op", "name": "int times", "pid": 1, "tid": 1, "ts": 7, "dur": 2},
        {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 8,
         "args": {"Total Allocated": 100, "Total Reserved": 200, "Device Type": 1}},
        {"ph": "i", "name": "[memory]", "ts": 9, "args": {"Total Allocated": 7, "Device Type": 0}},
    ]  # fmt: skip
    trace = read_trace(write_trace(events), workers=1)
    assert _names(trace.ops, trace) == ["str ids", "int times"]
    assert list(trace.ops.dur) == [0.0, 2.0]
    assert trace.threads[trace.ops.thread[0]] == ("Spans", "t")
    assert list(trace.memory.allocated) == [100] and list(trace.memory.reserved) == [200]
    assert len(trace) == 2


def test_unneeded_categories_are_dropped(write_trace: Callable[..., Path]) -> None:
    events = [
        event("python_function", "f", 1.0, 1.0),
        event("gpu_user_annotation", "ProfilerStep#1", 1.0, 1.0),
        event("user_annotation", "ProfilerStep#1", 1.0, 1.0),
        event("cuda_driver", "cuLaunchKernel", 1.0, 1.0, correlation=3),
        event("gpu_memset", "Memset (Device)", 2.0, 1.0, device=0, correlation=4),
    ]
    trace = read_trace(write_trace(events), workers=1)
    assert _names(trace.ranges, trace) == ["ProfilerStep#1"]
    assert list(trace.calls.corr) == [3] and list(trace.gpu.kind) == [2]
    assert len(trace.ops) == 0
    assert len(trace) == 3


_MAIN_PID = os.getpid()
_WORK = events._work


def _dies_in_workers(text: bytes) -> Any:
    """Decodes in the test process; a worker process dies, as if killed for memory."""
    if os.getpid() != _MAIN_PID:
        os._exit(1)
    return _WORK(text)


@pytest.mark.usefixtures("small_chunks")
def test_a_dead_worker_sends_its_runs_back(
    monkeypatch: pytest.MonkeyPatch, write_trace: Callable[..., Path]
) -> None:
    path = write_trace({"traceEvents": _events(300, tricky_every=1000)})
    expected = _canonical(read_trace(path, workers=1))
    monkeypatch.setattr("libreyolo.kineto.events._work", _dies_in_workers)
    assert _canonical(read_trace(path, workers=2)) == expected
