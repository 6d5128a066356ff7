"""Streaming reads: every layout of a trace decodes to the same columns, wherever the cuts fall."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from libreyolo.errors import AnalysisError
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
    assert _canonical(read_trace(path, workers=3)) == expected


class _Halves:
    """Records what each `read_trace` got from reading in halves: True (read so), False (it
    fell back to one process)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.results: list[bool] = []
        read = events._read_in_halves

        def spy(*args: Any) -> TraceEvents | None:
            found = read(*args)
            self.results.append(found is not None)
            return found

        monkeypatch.setattr(events, "_read_in_halves", spy)


def _children() -> set[int]:
    """This process's children, alive or not yet reaped (Linux's per-thread lists)."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            found.update(int(pid) for pid in (task / "children").read_text().split())
    return found


@pytest.fixture(autouse=True)
def _children_before() -> Iterator[None]:
    """The children this process had before the test (an earlier test's fork server, kept by
    multiprocessing for the process's life): they are not the read's."""
    _BEFORE.clear()
    _BEFORE.update(_children())
    yield


_BEFORE: set[int] = set()


def _no_child_left() -> bool:
    """Whether the read left no child behind, running or unreaped."""
    return not (_children() - _BEFORE)


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("layout", ["metadata first", "metadata last", "bare list"])
def test_two_workers_read_a_plain_trace_in_halves_like_one_process(
    layout: str, monkeypatch: pytest.MonkeyPatch, write_trace: Callable[..., Path]
) -> None:
    trace_events = _events(400, tricky_every=1000)
    meta = {"deviceProperties": [{"id": 0, "name": "GPU", "numSms": 132}], "displayTimeUnit": "ns"}
    document: Any = {
        "metadata first": {**meta, "traceEvents": trace_events},
        "metadata last": {"traceEvents": trace_events, **meta},
        "bare list": trace_events,
    }[layout]
    path = write_trace(document)
    expected = _canonical(read_trace(path, workers=1))
    halves = _Halves(monkeypatch)
    trace = read_trace(path, workers=2)
    assert halves.results == [True]
    assert _canonical(trace) == expected
    assert len(trace) == 1200
    assert (trace.time_unit == "ns") is (layout != "bare list")
    assert _no_child_left()


def _one_process_reads(
    path: Path, monkeypatch: pytest.MonkeyPatch, expected: dict[str, Any]
) -> None:
    halves = _Halves(monkeypatch)
    assert _canonical(read_trace(path, workers=2)) == expected
    assert halves.results == [False]
    assert _no_child_left()


@pytest.mark.usefixtures("small_chunks")
def test_a_cut_inside_a_string_is_read_by_one_process(
    monkeypatch: pytest.MonkeyPatch, write_trace: Callable[..., Path]
) -> None:
    """The middle of the array falls in a name that reads like empty events (`}, {}, {`): the
    cut looks right from both sides, but the first half cannot close its array."""
    trace_events = _events(20, tricky_every=1000)
    trace_events.insert(10, event("cpu_op", "{}, " * 4000, 95.0, 1.0))
    path = write_trace({"traceEvents": trace_events})
    _one_process_reads(path, monkeypatch, _canonical(read_trace(path, workers=1)))


@pytest.mark.usefixtures("small_chunks")
def test_strings_and_nested_objects_that_look_like_cuts_are_passed_over(
    monkeypatch: pytest.MonkeyPatch, write_trace: Callable[..., Path]
) -> None:
    trace_events = _events(40, tricky_every=1)  # every kernel has a list of objects
    trace_events.insert(20, event("cpu_op", '}, {"ph": "X"' * 4000, 195.0, 1.0))
    path = write_trace({"traceEvents": trace_events})
    expected = _canonical(read_trace(path, workers=1))
    halves = _Halves(monkeypatch)
    assert _canonical(read_trace(path, workers=2)) == expected
    assert halves.results == [True]


@pytest.mark.usefixtures("small_chunks")
def test_a_cut_after_the_event_array_is_read_by_one_process(
    monkeypatch: pytest.MonkeyPatch, write_trace: Callable[..., Path]
) -> None:
    """Most of the file is deviceProperties after traceEvents: the middle's `}, {` is between
    two devices, and the first half's array closes before its added `]`."""
    devices = [{"id": i, "name": f"GPU {i}"} for i in range(2000)]
    path = write_trace({"traceEvents": _events(20, tricky_every=1000), "deviceProperties": devices})
    expected = _canonical(read_trace(path, workers=1))
    assert len(expected["devices"]) == 2000
    _one_process_reads(path, monkeypatch, expected)


def _dies(*args: Any) -> Any:
    os._exit(3)


@pytest.mark.usefixtures("small_chunks")
def test_a_dead_second_half_is_read_again_by_one_process(
    monkeypatch: pytest.MonkeyPatch, write_trace: Callable[..., Path]
) -> None:
    path = write_trace({"traceEvents": _events(300, tricky_every=1000)})
    expected = _canonical(read_trace(path, workers=1))
    monkeypatch.setattr(events, "_read_second", _dies)  # in the child, as if killed for memory
    _one_process_reads(path, monkeypatch, expected)


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("where", [0.25, 0.75])
def test_a_broken_half_fails_as_one_process_fails(
    where: float, monkeypatch: pytest.MonkeyPatch, write_trace: Callable[..., Path]
) -> None:
    text = json.dumps({"traceEvents": _events(300, tricky_every=1000)})
    at = text.index('"ph":', int(len(text) * where)) + len('"ph"')
    path = write_trace(text[:at] + "@" + text[at + 1 :])  # `"ph"@ "X"`
    with pytest.raises(AnalysisError) as alone:
        read_trace(path, workers=1)
    halves = _Halves(monkeypatch)
    with pytest.raises(AnalysisError) as in_halves:
        read_trace(path, workers=2)
    assert str(in_halves.value) == str(alone.value)
    assert "invalid JSON at byte" in str(alone.value)
    assert halves.results == [False]
    assert _no_child_left()


@pytest.mark.usefixtures("small_chunks")
def test_an_interrupted_first_half_stops_the_second(
    monkeypatch: pytest.MonkeyPatch, write_trace: Callable[..., Path]
) -> None:
    path = write_trace({"traceEvents": _events(300, tricky_every=1000)})

    def interrupted(*args: Any) -> bytes:
        raise KeyboardInterrupt

    monkeypatch.setattr(events, "_read_first", interrupted)
    closed: list[bool] = []
    close = events.TraceEvents.close
    monkeypatch.setattr(
        events.TraceEvents, "close", lambda self: closed.append(True) or close(self)
    )
    with pytest.raises(KeyboardInterrupt):
        read_trace(path, workers=2, spool_ops=(lambda name: False, lambda name: False))
    assert closed == [True]  # the spools' files are gone
    assert _no_child_left()


@pytest.mark.usefixtures("small_chunks")
def test_two_workers_read_gzip_in_one_process(
    monkeypatch: pytest.MonkeyPatch, write_trace: Callable[..., Path]
) -> None:
    path = write_trace({"traceEvents": _events(300, tricky_every=1000)}, "t.json.gz")
    _one_process_reads(path, monkeypatch, _canonical(read_trace(path, workers=1)))
