"""Files that cannot be analysed fail with the right error class and a one-line message."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from libreyolo.errors import AnalysisError, MissingFileError, ProfileError
from libreyolo.kineto import analyse_trace
from tests.kineto.conftest import event

TRACE = {"traceEvents": [event("cpu_op", "aten::add", 10.0, 5.0)] * 200}


def _fails(path: Path, error: type[ProfileError]) -> str:
    with pytest.raises(error) as caught:
        analyse_trace(path)
    message = caught.value.message
    assert "\n" not in message
    assert message == str(caught.value)
    return message


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    path = tmp_path / "absent.json"
    assert _fails(path, MissingFileError) == f"not found: {path}"


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    assert _fails(tmp_path, MissingFileError) == f"not a file: {tmp_path} is a directory"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("", "the file is empty"),
        ("  \n", "the file is empty"),
        ("{}", "not a Chrome trace (no traceEvents)"),
        ("[]", "the trace holds no events"),
        ('{"traceEvents": []}', "the trace holds no events"),
        ('{"model": "yolo9t", "epochs": 3, "data": {"names": ["traceEvents"]}}', "no traceEvents"),
        ('{"nested": {"traceEvents": []}}', "not a Chrome trace (no traceEvents)"),
        ('{"traceEvents": {"ph": "X"}}', "not a Chrome trace (traceEvents is not a list)"),
        ("[1, 2, 3]", "not a Chrome trace (unexpected value: Expected `object`, got `int`)"),
        ('"a string"', "not a Chrome trace (neither an object nor a list)"),
        ("hello world", "invalid JSON at byte 0: invalid character"),
        ('[{"ph": "M", "name": "process_name", "pid": 1}]', "the trace holds no events"),
        ('[{"ph": "X", "cat": "python_function", "ts": 1, "dur": 2}]', "holds no events"),
        ('[{"ph": "X", "ts": 1, "dur": 2}] trailing', "extra data after the event list"),
    ],
)
def test_unusable_content_cannot_be_analysed(
    content: str, reason: str, write_trace: Callable[..., Path]
) -> None:
    path = write_trace(content)
    message = _fails(path, AnalysisError)
    assert message.startswith(f"failed to analyse {path}: ")
    assert reason in message


def test_garbage_bytes_are_invalid_json(write_trace: Callable[..., Path]) -> None:
    path = write_trace(b"\x00\xff\xfe binary")
    assert "invalid JSON" in _fails(path, AnalysisError)


def test_truncated_json_reports_where_it_ends(write_trace: Callable[..., Path]) -> None:
    text = json.dumps(TRACE)
    path = write_trace(text[:5000])
    assert _fails(path, AnalysisError) == f"failed to analyse {path}: truncated JSON at byte 5000"


@pytest.mark.parametrize("cut", [10, 3000, -2])
def test_truncated_plain_json_anywhere_fails(cut: int, write_trace: Callable[..., Path]) -> None:
    path = write_trace(json.dumps(TRACE)[:cut])
    assert "truncated JSON" in _fails(path, AnalysisError)


def test_truncated_gzip_fails(tmp_path: Path) -> None:
    data = gzip.compress(json.dumps(TRACE).encode())
    path = tmp_path / "trace.json.gz"
    path.write_bytes(data[: len(data) // 2])
    assert "truncated gzip data" in _fails(path, AnalysisError)


def test_gzip_of_a_truncated_trace_fails(write_trace: Callable[..., Path]) -> None:
    path = write_trace(json.dumps(TRACE)[:4000], "trace.json.gz")
    assert "truncated JSON at byte 4000" in _fails(path, AnalysisError)


def test_invalid_json_inside_the_events_fails(write_trace: Callable[..., Path]) -> None:
    text = json.dumps(TRACE).replace('"dur": 5.0', '"dur": 5.0,,', 1)
    assert "invalid JSON" in _fails(write_trace(text), AnalysisError)


def test_errors_carry_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_bytes(b"")
    with pytest.raises(AnalysisError) as caught:
        analyse_trace(path)
    assert caught.value.hint
