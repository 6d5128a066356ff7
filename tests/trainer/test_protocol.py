"""The trainer probe's reports are input from another environment: every malformed one is a
TrainerFailedError line (exit 3), never a traceback, a NaN or an infinite time in a profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from libreyolo.errors import TrainerFailedError
from libreyolo.measure.trainer.process import read_result
from libreyolo.measure.trainer.protocol import ProbeReady, checked

GOOD = {
    "protocol": 1,
    "samples": [
        {"index": 0, "iteration": 2, "synced": False, "wall_ms": 10.5, "dataload_ms": 0.5},
        {"index": 1, "iteration": 5, "synced": True, "wall_ms": 9.0, "phase_ms": {"forward": 4.0}},
    ],
    "bare_ms": [10.0],
}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "probe.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_report_reads_back_typed(tmp_path: Path) -> None:
    result = read_result(_write(tmp_path, json.dumps(GOOD)))
    assert [s.iteration for s in result.samples] == [2, 5]
    assert result.samples[1].phase_ms == {"forward": 4.0} and result.bare_ms == [10.0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "left no readable probe.json"),
        ("[" * 100000 + "]" * 100000, "left no readable probe.json"),
        (json.dumps([1, 2]), "is not protocol 1"),
        (json.dumps({**GOOD, "protocol": 2}), "is not protocol 1"),
        (json.dumps({"protocol": 1}), "is malformed: Object missing required field `samples`"),
        ('{"protocol": 1, "samples": [], "bare_ms": [NaN]}', "is malformed"),
        ('{"protocol": 1, "samples": [], "bare_ms": [Infinity]}', "is malformed"),
        (json.dumps({**GOOD, "bare_ms": [-1.0]}), "is malformed"),
        (json.dumps({**GOOD, "bare_ms": ["1"]}), "is malformed"),
        (json.dumps({**GOOD, "samples": [{"index": 0}]}), "is malformed"),
        (json.dumps({**GOOD, "trace": "x" * 5000}), "is malformed"),
    ],
)
def test_a_malformed_report_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(TrainerFailedError, match=message):
        read_result(_write(tmp_path, text))


def test_a_huge_report_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "probe.json"
    with path.open("wb") as handle:
        handle.truncate(65 << 20)  # sparse: no time or disk spent writing it
    with pytest.raises(TrainerFailedError, match="over 64 MiB"):
        read_result(path)
    with pytest.raises(TrainerFailedError, match="no readable"):
        read_result(tmp_path / "missing.json")


@pytest.mark.parametrize(
    "event",
    [
        {"batches_per_epoch": -1},
        {"batches_per_epoch": "8"},
        {},
        {"batches_per_epoch": 8, "imgsz": ["a"]},
        {"batches_per_epoch": 8, "device": "x" * 5000},
    ],
)
def test_a_malformed_ready_event_is_one_line(event: dict[str, object]) -> None:
    with pytest.raises(TrainerFailedError, match="ready event is malformed"):
        checked(ProbeReady, event, "ready event")
