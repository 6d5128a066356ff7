"""ONNX Runtime's own per-node profile, merged into the window's Chrome trace, so that `ops`,
`phases` and the trace viewer show what ran inside an ONNX Runtime forward.

torch.profiler sees an ORT call as one opaque stretch of the `forward` phase. ORT's profiler
(`SessionOptions.enable_profiling`) writes a Chrome-format JSON of its own: per run a
`model_run` event, and per node a `<node>_kernel_time` event (cat `Node`) whose `args` name
the ONNX op type and execution provider, timed on ORT's own clock from its session start.

What maps to what: run r of the session is iteration r of the window (the predict path calls
the forward once per iteration, and nothing else calls it), and a traced iteration is the
trace's `ProfilerStep#r`. Each node event of run r becomes a CPU op `onnxruntime::<OpType>`
(args: the node's name and provider) on the thread of that step's `step/forward` range, shifted
so that the run starts where the range starts: it nests inside the forward phase, and `ops`
groups it by op type as it groups `aten::` ops. ORT's session, fence and thread-pool events and
the runs of untraced iterations are dropped. On CUDA a node's time is its host-side launch span,
as ORT measures it, not the kernel's.

Must not: print, or change any event torch recorded.
"""

from __future__ import annotations

import json
import os
from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from libreyolo.document.files import write_atomic
from libreyolo.document.phases import FORWARD

OP_PREFIX = "onnxruntime::"
NODE_SUFFIX = "_kernel_time"  # ORT's per-node compute event (others are fences)
STEP_PREFIX = "ProfilerStep#"
FORWARD_RANGE = f"step/{FORWARD}"


def read_ort_profile(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """ORT's profile events (a JSON list), and the file removed: it is not the run's output.
    An unreadable profile gives none: the window's own trace stands without them."""
    file = Path(path)
    try:
        events = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    finally:
        file.unlink(missing_ok=True)
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def merge_ort_nodes(trace_path: Path, ort_events: Sequence[dict[str, Any]]) -> int:
    """Put the node events of the traced runs into the Chrome trace at `trace_path` (rewritten
    atomically); returns the number of distinct nodes merged (0: nothing to merge)."""
    trace = json.loads(trace_path.read_text(encoding="utf-8"))
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        return 0
    forwards = _forward_ranges(events)
    runs = sorted(
        (float(e["ts"]), float(e.get("dur", 0)))
        for e in ort_events
        if e.get("name") == "model_run" and _timed(e)
    )
    starts = [start for start, _ in runs]
    merged, nodes = [], set()
    for node in ort_events:
        name, args = str(node.get("name", "")), node.get("args")
        if node.get("cat") != "Node" or not name.endswith(NODE_SUFFIX) or not _timed(node):
            continue
        if not isinstance(args, dict) or "op_name" not in args:
            continue
        run = bisect_right(starts, float(node["ts"])) - 1
        where = forwards.get(run)
        if run < 0 or where is None:
            continue  # a run of an untraced iteration
        shift = where["ts"] - starts[run]
        nodes.add(name)
        merged.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": OP_PREFIX + str(args["op_name"]),
                "pid": where["pid"],
                "tid": where["tid"],
                "ts": float(node["ts"]) + shift,
                "dur": float(node["dur"]),
                "args": {"node": name[: -len(NODE_SUFFIX)], "provider": args.get("provider")},
            }
        )
    if not merged:
        return 0
    events.extend(merged)
    write_atomic(trace_path, json.dumps(trace).encode("utf-8"))
    return len(nodes)


def _timed(event: dict[str, Any]) -> bool:
    return isinstance(event.get("ts"), int | float) and isinstance(event.get("dur"), int | float)


def _forward_ranges(events: list[Any]) -> dict[int, dict[str, Any]]:
    """Iteration -> its `step/forward` range (ts, pid, tid), by the enclosing ProfilerStep#N."""
    steps = sorted(
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]), int(e["name"][len(STEP_PREFIX) :]))
        for e in events
        if isinstance(e, dict)
        and str(e.get("name", "")).startswith(STEP_PREFIX)
        and str(e["name"])[len(STEP_PREFIX) :].isdigit()
        and _timed(e)
    )
    ranges: dict[int, dict[str, Any]] = {}
    for e in events:
        if not isinstance(e, dict) or e.get("name") != FORWARD_RANGE or not _timed(e):
            continue
        ts = float(e["ts"])
        step = next((n for start, end, n in steps if start <= ts <= end), None)
        if step is not None:
            ranges[step] = {"ts": ts, "pid": e.get("pid"), "tid": e.get("tid")}
    return ranges
