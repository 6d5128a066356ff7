"""The sweep's files as typed documents: tagged, read through the struct's rules and the
converter, written by the codec, and printed by `summary --json` as `sweep.json` holds them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from libreyolo.document.codec import document_bytes
from libreyolo.document.sweep_files import (
    INVALID,
    collect_sweep,
    point_entry,
    read_plan,
    read_request,
    read_status,
    read_sweep_record,
)
from libreyolo.document.sweep_model import PointRequest, PointStatus, SweepRecord
from libreyolo.sweep.report import write_report
from tests.conftest import invoke
from tests.sweep.test_report import _plan, make_point, make_sweep


def _edit(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(data | changes), encoding="utf-8")


def test_summary_json_of_a_running_sweep_is_the_bytes_of_its_finished_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # no chart: the one field that differs
    make_sweep(tmp_path)
    _plan(tmp_path, "b4_s64_amp1", "b1_s64_amp1", "b2_s96_amp1", "b9_s64_amp1")  # launch order
    running = invoke(["profile", "summary", str(tmp_path), "--json"])
    assert running.status == 0, running.stderr
    write_report(tmp_path)
    finished = invoke(["profile", "summary", str(tmp_path), "--json"])
    assert finished.stdout == running.stdout  # the same record, byte for byte
    record = json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))
    assert running.stdout == json.dumps(record, indent=2) + "\n"  # keys sorted, as the file
    assert list(record["points"]) == sorted(record["points"])
    assert record["points"]["b9_s64_amp1"]["status"] == "missing"


def test_a_record_reads_back_as_the_struct_the_sweep_wrote(tmp_path: Path) -> None:
    written = write_report(make_sweep(tmp_path)).record
    assert isinstance(written, SweepRecord)
    read = read_sweep_record(tmp_path / "sweep.json")
    assert read == written
    assert read.points["b4_s64_amp1"].metrics.memory_pressure is True
    assert read.recommended == {"64": "b2_s64_amp1", "96": "b1_s96_amp1"}
    assert (tmp_path / "sweep.json").read_bytes() == document_bytes(read)


def test_an_older_record_reads_with_the_defaults_of_the_fields_added_since(
    tmp_path: Path,
) -> None:
    write_report(make_sweep(tmp_path))
    path = tmp_path / "sweep.json"
    older = json.loads(path.read_text(encoding="utf-8"))
    del older["schema"], older["num_reused"], older["num_missing"]
    for row in older["points"].values():
        del row["threads"], row["reused"]
    older["points"]["b1_s64_amp1"]["from_a_newer_writer"] = 1
    path.write_text(json.dumps(older), encoding="utf-8")
    record = read_sweep_record(path)
    assert (record.schema, record.num_reused, record.num_missing) == ("libreyolo.sweep/v1", 0, 0)
    assert {row.reused for row in record.points.values()} == {False}
    shown = invoke(["profile", "summary", str(tmp_path), "--json"]).json()
    assert isinstance(shown, dict)
    assert "from_a_newer_writer" not in shown["points"]["b1_s64_amp1"]  # type: ignore[index]
    assert shown["num_reused"] == 0 and shown["schema"] == "libreyolo.sweep/v1"


@pytest.mark.parametrize(
    ("leaf", "reason"),
    [
        ("point.json", "point.json schema is 'libreyolo.sweep-point/v9', not one of "),
        ("status.json", "status.json schema is 'libreyolo.sweep-status/v9', not one of "),
    ],
)
def test_a_point_file_of_an_unknown_tag_fails_that_point_naming_it(
    tmp_path: Path, leaf: str, reason: str
) -> None:
    make_point(tmp_path, 1, 64, 50.0)
    make_point(tmp_path, 2, 64, 80.0)
    tag = "libreyolo.sweep-point/v9" if leaf == "point.json" else "libreyolo.sweep-status/v9"
    _edit(tmp_path / "b2_s64_amp1" / leaf, schema=tag)
    rows = collect_sweep(tmp_path)
    assert rows["b1_s64_amp1"].status == "ok"
    bad = rows["b2_s64_amp1"]
    assert (bad.status, bad.code) == ("failed", INVALID)
    assert bad.reason is not None and bad.reason.startswith(reason)
    folder = tmp_path / "b2_s64_amp1"
    unread = read_request(folder / leaf) if leaf == "point.json" else read_status(folder / leaf)
    assert unread is None  # not a file of ours


def test_a_status_field_no_reader_used_before_is_checked_too(tmp_path: Path) -> None:
    make_point(tmp_path, 1, 64, 50.0, status={"pid": "4242"})
    row = point_entry(tmp_path / "b1_s64_amp1", tmp_path)
    assert (row.status, row.code) == ("failed", INVALID)
    assert row.reason == "status.json pid is a string, not an integer"


def test_a_plan_with_an_override_that_is_no_string_is_no_plan(tmp_path: Path) -> None:
    make_point(tmp_path, 1, 64, 50.0)
    plan = {"schema": "libreyolo.sweep-plan/v1", "points": {"b1_s64_amp1": [1], "b8": []}}
    (tmp_path / "sweep_plan.json").write_text(json.dumps(plan), encoding="utf-8")
    assert read_plan(tmp_path) is None
    assert list(collect_sweep(tmp_path)) == ["b1_s64_amp1"]  # the folders found, not the plan


def test_the_readers_give_the_structs_the_writers_wrote(tmp_path: Path) -> None:
    request = PointRequest(config={"batch": 2, "model": {"family": "yolo9"}}, overrides=["a=1"])
    status = PointStatus(status="ok", reason="", code="", profile="infer/profile.json", pid=7)
    (tmp_path / "point.json").write_bytes(document_bytes(request))
    (tmp_path / "status.json").write_bytes(document_bytes(status))
    assert read_request(tmp_path / "point.json") == request
    assert read_status(tmp_path / "status.json") == status
    written = json.loads((tmp_path / "status.json").read_text(encoding="utf-8"))
    assert "reused" not in written and written["schema"] == "libreyolo.sweep-status/v1"
    assert set(json.loads((tmp_path / "point.json").read_text("utf-8"))) == {
        "schema",
        "config",
        "overrides",
    }
