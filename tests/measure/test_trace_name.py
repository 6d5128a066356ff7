"""rename_trace: the trace's `traceName` names the committed file, rewritten from the tail only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from libreyolo.measure.trace_name import TAIL_BYTES, rename_trace

# What torch's exporter writes after the last event (its spacing kept).
TORCH_TAIL = '  ],"traceName": "/p/.infer.partial-1-ab/profile_trace.json" }'


def _trace(path: Path, events: int = 3, tail: str = TORCH_TAIL) -> Path:
    body = ",\n".join(
        json.dumps({"ph": "X", "name": f"op{i}", "ts": i, "dur": 1}) for i in range(events)
    )
    path.write_text('{"traceEvents": [\n' + body + "\n" + tail + "\n", encoding="utf-8")
    return path


def test_the_name_becomes_the_final_path_and_the_events_stay(tmp_path: Path) -> None:
    path = _trace(tmp_path / "t.json")
    before = json.loads(path.read_text("utf-8"))["traceEvents"]
    assert rename_trace(path, tmp_path / "infer" / "profile_trace.json")
    trace = json.loads(path.read_text("utf-8"))
    assert trace["traceName"] == str(tmp_path / "infer" / "profile_trace.json")
    assert trace["traceEvents"] == before


def test_a_relative_final_path_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = _trace(tmp_path / "t.json")
    assert rename_trace(path, Path("runs/infer/profile_trace.json"))
    assert json.loads(path.read_text("utf-8"))["traceName"] == str(
        tmp_path / "runs/infer/profile_trace.json"
    )


def test_a_path_with_quotes_and_unicode_stays_valid_json(tmp_path: Path) -> None:
    path = _trace(tmp_path / "t.json")
    final = tmp_path / 'we"ird ñame' / "profile_trace.json"
    assert rename_trace(path, final)
    assert json.loads(path.read_text("utf-8"))["traceName"] == str(final)


def test_a_longer_or_shorter_name_in_a_big_trace(tmp_path: Path) -> None:
    path = _trace(tmp_path / "t.json", events=5000)  # larger than the tail read
    assert path.stat().st_size > TAIL_BYTES
    for final in (tmp_path / ("x" * 300) / "t.json", tmp_path / "t.json"):
        assert rename_trace(path, final)
        trace = json.loads(path.read_text("utf-8"))
        assert trace["traceName"] == str(final) and len(trace["traceEvents"]) == 5000


def test_a_tail_without_a_readable_name_is_left_as_it_was(tmp_path: Path) -> None:
    for tail in ("  ]}", '  ],"traceName": "unterminated }'):
        path = _trace(tmp_path / "t.json", tail=tail)
        before = path.read_bytes()
        assert not rename_trace(path, tmp_path / "final.json")
        assert path.read_bytes() == before
