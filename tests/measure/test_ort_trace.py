"""ORT's per-node profile merged into the window's Chrome trace: run r is iteration r, placed
inside that step's forward range; untraced runs, fences and malformed events are dropped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from libreyolo.measure.ort_trace import merge_ort_nodes, read_ort_profile


def _trace(tmp_path: Path) -> Path:
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "ts": 1000.0,
         "dur": 100.0, "pid": 7, "tid": 8},
        {"ph": "X", "cat": "user_annotation", "name": "step/forward", "ts": 1040.0,
         "dur": 50.0, "pid": 7, "tid": 8},
    ]  # fmt: skip
    path = tmp_path / "profile_trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def _node(name: str, ts: float, op: str | None = "Conv", cat: str = "Node") -> dict[str, Any]:
    args = {"op_name": op, "provider": "CPUExecutionProvider"} if op else {}
    return {"cat": cat, "name": name, "ts": ts, "dur": 5.0, "args": args}


def test_the_traced_run_lands_inside_its_forward_and_the_rest_is_dropped(tmp_path: Path) -> None:
    runs = [{"cat": "Session", "name": "model_run", "ts": 100.0 * r, "dur": 40.0} for r in range(4)]
    ort = [
        *runs,
        _node("conv1_kernel_time", 210.0),  # run 2: the traced ProfilerStep#2
        _node("conv1_fence_before", 209.0),  # a fence, not a node's compute
        _node("add_kernel_time", 212.0, op=None),  # no op type
        _node("conv1_kernel_time", 10.0),  # run 0: warmup, not traced
        _node("conv1_kernel_time", 310.0),  # run 3: no forward range in the trace
        {"cat": "Node", "name": "bad_kernel_time", "ts": "x", "dur": 1},
        "not an event",
    ]
    path = _trace(tmp_path)
    assert merge_ort_nodes(path, [e for e in ort if isinstance(e, dict)]) == 1
    merged = [e for e in json.loads(path.read_text())["traceEvents"] if e["cat"] == "cpu_op"]
    assert merged == [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "onnxruntime::Conv",
            "pid": 7,
            "tid": 8,
            "ts": 1050.0,  # forward starts at 1040, the run at 200: 210 + 840
            "dur": 5.0,
            "args": {"node": "conv1", "provider": "CPUExecutionProvider"},
        }
    ]


def test_nothing_to_merge_leaves_the_trace_as_it_was(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    before = path.read_bytes()
    assert merge_ort_nodes(path, []) == 0
    assert path.read_bytes() == before
    path.write_text(json.dumps([1, 2]))  # not a Chrome trace object
    assert merge_ort_nodes(path, [_node("a_kernel_time", 1.0)]) == 0


def test_the_ort_profile_file_is_read_once_and_removed(tmp_path: Path) -> None:
    file = tmp_path / "ort.json"
    file.write_text(json.dumps([_node("a_kernel_time", 1.0), 5]))
    assert read_ort_profile(file) == [_node("a_kernel_time", 1.0)]
    assert not file.exists()
    file.write_text(json.dumps({"not": "a list"}))
    assert read_ort_profile(file) == [] and not file.exists()
    file.write_text('[{"cat": "Node", "na')  # ORT killed mid-write
    assert read_ort_profile(file) == [] and not file.exists()
