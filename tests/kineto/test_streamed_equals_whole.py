"""The streamed analysis equals the simple one: the whole file decoded in one msgspec call.

The simple path holds the file and every event at once, so it has no cut to get wrong; the
streamed path cuts `traceEvents` into runs at byte boundaries it must prove. Both feed the same
builder and reduction, so any difference is the cutter's. Chunks of a few dozen bytes put a cut
inside every string, escape, nested object and separator of the adversarial trace.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from libreyolo.document.model import TraceAnalysis
from libreyolo.kineto import analyse_trace
from libreyolo.kineto.events import Event, Meta, _Builder
from libreyolo.kineto.reduce import reduce_trace
from tests.kineto.conftest import A100, B200, H100, V100, event, fixture_path, kernel, launch


class _Document(Meta):
    events: list[Event] = msgspec.field(default_factory=list, name="traceEvents")


def _whole(path: Path) -> TraceAnalysis:
    """The analysis of `path` decoded in one call, with no cut."""
    data = path.read_bytes()
    data = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    document = msgspec.json.decode(data, type=_Document, strict=False)
    builder = _Builder()
    builder.add(document.events)
    return reduce_trace(builder.finish(document))


def _shrink(monkeypatch: pytest.MonkeyPatch, chunk_bytes: int) -> None:
    """Read in chunks of `chunk_bytes`, and hand a trace over 3 of them to the pool."""
    monkeypatch.setattr("libreyolo.kineto.source.CHUNK_BYTES", chunk_bytes)
    monkeypatch.setattr("libreyolo.kineto.source.PARALLEL_MIN_BYTES", 3 * chunk_bytes)


@pytest.mark.parametrize("name", [A100, V100, H100, B200])
def test_real_traces_streamed_in_small_chunks_equal_the_whole_decode(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = fixture_path(name)
    expected = _whole(path)
    assert analyse_trace(path, workers=1) == expected  # the default chunk
    _shrink(monkeypatch, 4096)
    assert analyse_trace(path, workers=1) == expected


@pytest.mark.parametrize("name", [A100, V100, H100, B200])
def test_real_traces_sorted_in_tiny_runs_equal_the_whole_decode(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GPU activity, correlation ids and launch times sorted three at a time and merged."""
    path = fixture_path(name)
    expected = _whole(path)
    monkeypatch.setattr("libreyolo.kineto.intervals.SORT_RUN", 3)
    assert analyse_trace(path, workers=1) == expected


# Names and args that hold what the cutter looks for: event separators, array ends, quotes,
# escapes (a cut can fall between a backslash and what it escapes), and nested objects in lists.
HOSTILE_NAMES = [
    'aten::conv}, {"ph": "X"',
    "step}]",
    'quote \\" and }, { inside',
    "back\\\\slash\\\\",
    "unicode é \u007d\u005d",
    '{"nested": [{"a": 1}]}',
]


def _hostile_trace() -> dict[str, Any]:
    """Two ProfilerSteps of nested ops whose names are HOSTILE_NAMES, each launching a kernel,
    with dropped categories, memory samples and nested args in between."""
    events: list[dict[str, Any]] = []
    corr = 100
    for step in range(2):
        base = 10_000.0 * step
        events.append(event("user_annotation", f"ProfilerStep#{step}", base, 9_000.0))
        events.append(event("user_annotation", "step/forward", base + 10, 4_000.0))
        for k, name in enumerate(HOSTILE_NAMES):
            start = base + 20 + 500 * k
            events.append(event("cpu_op", name, start, 400.0, extra=[{"x": "}]"}, {"y": name}]))
            events.append(event("cpu_op", "aten::mm", start + 10, 100.0))
            events.append(launch(start + 20, corr, tid=1))
            events.append(kernel(f"kernel {name}", start + 30, 50.0, corr))
            events.append({"ph": "X", "cat": "python_function", "name": name, "ts": start})
            events.append({"ph": "f", "cat": "ac2g", "id": corr, "name": "}, {", "ts": start})
            corr += 1
        events.append(
            {
                "ph": "i",
                "name": "[memory]",
                "ts": base + 100,
                "args": {"Total Allocated": 1000 + step, "Device Type": 1, "Device Id": 0},
            }
        )
    return {"traceEvents": events, "displayTimeUnit": "ms", "deviceProperties": [{"id": 0}]}


@pytest.mark.parametrize(
    ("chunk_bytes", "workers"), [(61, 1), (300, 1), (4096, 1), (300, 2), (4096, 2)]
)
@pytest.mark.parametrize("layout", ["compact", "one per line", "padded"])
@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_hostile_names_cut_anywhere_equal_the_whole_decode(
    chunk_bytes: int,
    workers: int,
    layout: str,
    suffix: str,
    monkeypatch: pytest.MonkeyPatch,
    write_trace: Callable[..., Path],
) -> None:
    document = _hostile_trace()
    if layout == "compact":
        text = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    elif layout == "one per line":
        text = json.dumps(document).replace('}, {"ph"', '},\n{"ph"')
    else:
        text = json.dumps(document, indent=7)
    path = write_trace(text, f"hostile{suffix}")
    expected = _whole(path)
    assert {op.name for op in expected.ops} >= set(HOSTILE_NAMES)  # the names survived
    assert expected.num_steps == 2 and expected.num_kernels == 2 * len(HOSTILE_NAMES)
    _shrink(monkeypatch, chunk_bytes)
    assert analyse_trace(path, workers=workers) == expected
