"""`read_tune_record`: tune.json read back as the sweeper wrote it, None where there is none, and
anything else one AnalysisError (exit 1) naming the file and the field: a hand-written tune.json
(tests/data/tune.json) mutated into every value no search writes, and hostile files."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from libreyolo.document.limits import MAX_RECORD_BYTES
from libreyolo.document.sweep_io import TUNE_FILE, read_tune_record
from libreyolo.document.sweep_validate import TUNE_HINT
from libreyolo.document.tune_model import TUNE_SCHEMA
from libreyolo.errors import AnalysisError, ExitStatus
from tests.tune_records import knee_record, write_tune_sweep

HAND_WRITTEN = Path(__file__).resolve().parents[1] / "data" / "tune.json"
Edit = Callable[[dict[str, Any]], object]


def hand_written() -> dict[str, Any]:
    data = json.loads(HAND_WRITTEN.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _at(*keys_and_value: Any) -> Edit:
    """Set the value at a path of keys and indices."""
    *keys, last, value = keys_and_value

    def edit(data: dict[str, Any]) -> None:
        for key in keys:
            data = data[key]
        data[last] = value

    return edit


def _drop(*keys: Any) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        for key in keys[:-1]:
            data = data[key]
        del data[keys[-1]]

    return edit


S, P = "series", "path"
STEP = (S, 0, P, 1)
FIELD_CASES: list[tuple[str, Edit, str]] = [
    (
        "batch zero",
        _at(*STEP, "batch", 0),
        "series[0].path[1].batch is 0 (out of range 1..1048576)",
    ),
    (
        "batch 10**30",
        _at(*STEP, "batch", 10**30),
        "series[0].path[1].batch is 1e+30 (out of range 1..1048576)",
    ),
    (
        "batch bool",
        _at(*STEP, "batch", True),
        "series[0].path[1].batch is a boolean, not an integer",
    ),
    (
        "batch float",
        _at(*STEP, "batch", 2.0),
        "series[0].path[1].batch is a number, not an integer",
    ),
    (
        "img/s 1e308",
        _at(*STEP, "img_per_s", 1e308),
        "series[0].path[1].img_per_s is 1e+308 (out of range 0 or 1e-06..1e+15)",
    ),
    (
        "img/s negative",
        _at(*STEP, "img_per_s", -3),
        "series[0].path[1].img_per_s is -3 (out of range 0 or 1e-06..1e+15)",
    ),
    ("fits text", _at(*STEP, "fits", "yes"), "series[0].path[1].fits is a string, not a boolean"),
    ("fits null", _at(*STEP, "fits", None), "series[0].path[1].fits is null, not a boolean"),
    ("fits missing", _drop(*STEP, "fits"), "series[0].path[1].fits is missing"),
    (
        "bound unknown",
        _at(*STEP, "bound", "fire"),
        "series[0].path[1].bound is 'fire', not one of oom, over_budget",
    ),
    (
        "trials negative",
        _at(*STEP, "trials", -1),
        "series[0].path[1].trials is -1 (out of range 0..65536)",
    ),
    (
        "versus list",
        _at(*STEP, "versus", [1]),
        "series[0].path[1].versus is a list, not an object",
    ),
    (
        "gain beyond the range",
        _at(*STEP, "versus", "gain_pct", -1e16),
        "series[0].path[1].versus.gain_pct is -1e+16 (out of range -1e+15..1e+15)",
    ),
    (
        "p over 1",
        _at(*STEP, "versus", "p_value", 1.5),
        "series[0].path[1].versus.p_value is 1.5 (out of range 0..1)",
    ),
    (
        "significant text",
        _at(*STEP, "versus", "significant", "no"),
        "series[0].path[1].versus.significant is a string, not a boolean",
    ),
    ("point number", _at(*STEP, "point", 7), "series[0].path[1].point is an integer, not a string"),
    ("path object", _at(S, 0, P, {"a": 1}), "series[0].path is an object, not a list"),
    ("step a number", _at(S, 0, P, 0, 5), "series[0].path[0] is an integer, not an object"),
    (
        "override number",
        _at(S, 0, "overrides", [1]),
        "series[0].overrides[0] is an integer, not a string",
    ),
    (
        "stop unknown",
        _at(S, 0, "stopped", "bored"),
        "series[0].stopped is 'bored', not one of no_gain, no_fit, batch_max, latency_bound, "
        "none_fits, failed, contended, interrupted",
    ),
    (
        "why of 10 MB",
        _at(S, 0, "why", "w" * (10 << 20)),
        f"series[0].why is a string of {10 << 20} characters (at most {1 << 20})",
    ),
    ("imgsz superscript", _at(S, 0, "imgsz", "²"), "series[0].imgsz is a string, not an integer"),
    (
        "series batch not measured",
        _at(S, 0, "batch", 5),
        "series[0].batch is 5, not a batch of its path",
    ),
    (
        "series too many",
        lambda d: d.__setitem__(S, d[S] * 4097),
        "series holds 4097 items (at most 4096)",
    ),
    ("series object", _at(S, {"a": 1}), "series is an object, not a list"),
    (
        "goal unknown",
        _at("settings", "goal", "fast"),
        "settings.goal is 'fast', not one of knee, maxfit, latency",
    ),
    (
        "percentile zero",
        _at("settings", "percentile", 0),
        "settings.percentile is 0 (out of range 1..100)",
    ),
    (
        "latency bound text",
        _at("settings", "max_latency_ms", "30"),
        "settings.max_latency_ms is a string, not a number",
    ),
    ("settings list", _at("settings", [1]), "settings is a list, not an object"),
    ("settings missing", _drop("settings"), "settings is missing"),
    ("mode unknown", _at("mode", "train"), "mode is 'train', not one of run, infer"),
    (
        "num_points beyond a float",
        _at("num_points", 10**400),
        "num_points is an integer beyond 1e+308 (out of range 0..4294967296)",
    ),
    (
        "evidence number",
        _at("recommended", 0, "evidence", 3),
        "recommended[0].evidence is an integer, not a string",
    ),
    (
        "recommended batch missing",
        _drop("recommended", 0, "batch"),
        "recommended[0].batch is missing",
    ),
    (
        "recommended point unknown",
        _at("recommended", 0, "point", "nope"),
        "recommended[0].point is 'nope', not a point of any series' path",
    ),
    (
        "recommended point with controls",
        _at("recommended", 0, "point", "a\x1b[2Jb"),
        "recommended[0].point is 'a\\x1b[2Jb', not a point of any series' path",
    ),
]


def _refusal(path: Path) -> AnalysisError:
    with pytest.raises(AnalysisError) as caught:
        read_tune_record(path)
    assert caught.value.status == ExitStatus.FAILED
    return caught.value


def test_no_tune_json_is_no_tune_record(tmp_path: Path) -> None:
    assert read_tune_record(tmp_path / TUNE_FILE) is None


def test_the_record_the_sweeper_writes_reads_back_equal(tmp_path: Path) -> None:
    for train in (False, True):
        record = knee_record(train=train)
        root = write_tune_sweep(tmp_path / str(train), record)
        assert read_tune_record(root / TUNE_FILE) == record


def test_the_hand_written_record_reads(tmp_path: Path) -> None:
    record = read_tune_record(HAND_WRITTEN)
    assert record is not None and record.settings.goal == "latency"
    assert [s.batch for s in record.series[0].path] == [1, 2, 4, 3]
    assert record.series[0].path[0].versus is None and record.recommended[0].batch == 3


@pytest.mark.parametrize(
    ("edit", "problem"), [c[1:] for c in FIELD_CASES], ids=[c[0] for c in FIELD_CASES]
)
def test_a_value_no_search_writes_is_refused_naming_the_field(
    tmp_path: Path, edit: Edit, problem: str
) -> None:
    data = copy.deepcopy(hand_written())
    edit(data)
    path = tmp_path / TUNE_FILE
    path.write_text(json.dumps(data), encoding="utf-8")
    err = _refusal(path)
    assert str(err) == f"failed to read tune record {path}: invalid tune record: {problem}"
    assert err.hint == TUNE_HINT


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (
            "{not json",
            "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        ),
        ('{"schema": "libreyolo.tune/v1", "num_points": NaN}', "NaN is not a finite number"),
        ('{"schema": "libreyolo.tune/v1", "num_points": 1e400}', "1e400 is not a finite number"),
        ("[1, 2]", "not a tune record (no schema tag)"),
        ('{"series": []}', "not a tune record (no schema tag)"),
        ('{"schema": "libreyolo.tune/v2"}', "unknown schema 'libreyolo.tune/v2'"),
        ('{"schema": ["libreyolo.tune/v1"]}', "unknown schema a list"),
        ("", "Expecting value: line 1 column 1 (char 0)"),
    ],
    ids=["not json", "NaN", "huge float", "a list", "no tag", "newer tag", "tag a list", "empty"],
)
def test_a_file_that_is_no_tune_record_of_ours_is_refused(
    tmp_path: Path, text: str, why: str
) -> None:
    path = tmp_path / TUNE_FILE
    path.write_text(text, encoding="utf-8")
    assert str(_refusal(path)) == f"failed to read tune record {path}: {why}"


def test_the_tag_is_named_in_the_hint(tmp_path: Path) -> None:
    path = tmp_path / TUNE_FILE
    path.write_text('{"schema": "libreyolo.tune/v2"}', encoding="utf-8")
    assert _refusal(path).hint == f"this libreyolo reads {TUNE_SCHEMA}"


def test_deep_nesting_is_refused_in_one_error(tmp_path: Path) -> None:
    path = tmp_path / TUNE_FILE
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    assert str(_refusal(path)).startswith(f"failed to read tune record {path}: maximum recursion")


def test_devices_folders_and_dangling_links_are_refused_without_a_read(tmp_path: Path) -> None:
    path = tmp_path / TUNE_FILE
    path.symlink_to("/dev/zero")
    assert str(_refusal(path)) == (
        f"failed to read tune record {path}: not a regular file: {path} (a character device)"
    )
    path.unlink()
    path.symlink_to(tmp_path / "gone")
    assert str(_refusal(path)) == f"failed to read tune record {path}: not found: {path}"
    path.unlink()
    path.mkdir()
    assert str(_refusal(path)) == (
        f"failed to read tune record {path}: not a file: {path} is a directory"
    )


def test_a_file_over_the_limit_is_refused_by_its_size(tmp_path: Path) -> None:
    path = tmp_path / TUNE_FILE
    with path.open("wb") as handle:  # sparse: nothing is written but its size
        handle.truncate(MAX_RECORD_BYTES + 1)
    assert os.path.getsize(path) == MAX_RECORD_BYTES + 1
    assert str(_refusal(path)) == (
        f"failed to read tune record {path}: failed to analyse {path}: exceeds the input limit "
        f"of {MAX_RECORD_BYTES} bytes"
    )
