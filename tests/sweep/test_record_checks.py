"""A sweep record is checked like a profile: a tampered `sweep.json` is one line naming the field
(exit 1) for every reader, and a point folder holding an unusable value is a failed point whose
reason names the file and field, while the sweep reads on."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from libreyolo.analysis.sweep import recommend, sweep_record
from libreyolo.document.convert import to_plain
from libreyolo.document.sweep_files import (
    INVALID,
    collect_points,
    point_folders,
    read_sweep_record,
)
from libreyolo.document.sweep_model import HeadlineMetrics, SweepRow
from libreyolo.document.sweep_validate import HINT, MAX_TEXT_CHARS, record_problem
from libreyolo.sweep.report import write_report
from tests.conftest import invoke
from tests.sweep.test_report import make_point, make_sweep

OK = "b1_s64_amp1"  # an ok point of make_sweep; b2_s96_amp1 is its failed one
Edit = Callable[[dict[str, Any]], object]


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The record `libreyolo-sweep` writes for make_sweep's five points."""
    root = make_sweep(tmp_path_factory.mktemp("sweep"))
    plain = to_plain(sweep_record(str(root), collect_points(root, point_folders(root))))
    assert isinstance(plain, dict)
    return plain


def _row(key: str, value: object) -> Edit:
    return lambda r: r["points"][OK].__setitem__(key, value)


def _metric(key: str, value: object) -> Edit:
    return lambda r: r["points"][OK]["metrics"].__setitem__(key, value)


def _top(key: str, value: object) -> Edit:
    return lambda r: r.__setitem__(key, value)


def _rename(name: str) -> Edit:
    return lambda r: r["points"].__setitem__(name, r["points"].pop(OK))


P = f"points['{OK}']"
RECORD_CASES: list[tuple[str, Edit, str]] = [
    (
        "batch 10**30",
        _row("batch", 10**30),
        f"{P}.batch is 1e+30 (out of range 1..1048576, or -1 for auto)",
    ),
    (
        "batch negative",
        _row("batch", -4),
        f"{P}.batch is -4 (out of range 1..1048576, or -1 for auto)",
    ),
    ("batch bool", _row("batch", True), f"{P}.batch is a boolean, not an integer"),
    ("imgsz superscript", _row("imgsz", "²"), f"{P}.imgsz is a string, not an integer"),
    ("imgsz zero", _row("imgsz", 0), f"{P}.imgsz is 0 (out of range 1..65536)"),
    ("threads float", _row("threads", 2.0), f"{P}.threads is a number, not an integer"),
    ("amp text", _row("amp", "yes"), f"{P}.amp is a string, not a boolean"),
    (
        "img/s 1e308",
        _metric("img_per_s", 1e308),
        f"{P}.metrics.img_per_s is 1e+308 (out of range 0 or 1e-06..1e+15)",
    ),
    (
        "img/s tiny",
        _metric("img_per_s", 1e-11),
        f"{P}.metrics.img_per_s is 1e-11 (out of range 0 or 1e-06..1e+15)",
    ),
    (
        "cpu wait over 1",
        _metric("cpu_wait_frac", 1.5),
        f"{P}.metrics.cpu_wait_frac is 1.5 (out of range 0 or 1e-06..1)",
    ),
    (
        "contended int",
        _metric("contended", 1),
        f"{P}.metrics.contended is an integer, not a boolean",
    ),
    ("metrics list", _row("metrics", [1]), f"{P}.metrics is a list, not an object"),
    ("overrides object", _row("overrides", {"a": 1}), f"{P}.overrides is an object, not a list"),
    ("override number", _row("overrides", [1]), f"{P}.overrides[0] is an integer, not a string"),
    (
        "status unknown",
        _row("status", "done"),
        f"{P}.status is 'done', not one of ok, failed, interrupted, missing",
    ),
    ("status missing", lambda r: r["points"][OK].pop("status"), f"{P}.status is missing"),
    ("reason number", _row("reason", 5), f"{P}.reason is an integer, not a string"),
    (
        "reason huge",
        _row("reason", "x" * (MAX_TEXT_CHARS + 1)),
        f"{P}.reason is a string of {MAX_TEXT_CHARS + 1} characters (at most {MAX_TEXT_CHARS})",
    ),
    ("profile list", _row("profile", ["p"]), f"{P}.profile is a list, not a string"),
    (
        "lease wait negative",
        _row("lease_wait_s", -1),
        f"{P}.lease_wait_s is -1 (out of range 0..1e+15)",
    ),
    ("row a list", lambda r: r["points"].__setitem__(OK, [1]), f"{P} is a list, not an object"),
    ("name huge", _rename("n" * 5000), "points has a name of 5000 characters (at most 4096)"),
    (
        "name with controls",
        lambda r: (_rename("a\x1b[2Jb")(r), r["points"]["a\x1b[2Jb"].__setitem__("batch", 0)),
        "points['a\\x1b[2Jb'].batch is 0 (out of range 1..1048576, or -1 for auto)",
    ),
    ("recommended list", _top("recommended", [1]), "recommended is a list, not an object"),
    (
        "recommended unknown point",
        _top("recommended", {"64": "nope"}),
        "recommended['64'] is 'nope', not a point of this sweep",
    ),
    (
        "num_ok beyond a float",
        _top("num_ok", 10**400),
        "num_ok is an integer beyond 1e+308 (out of range 0..4294967296)",
    ),
    ("sweep_dir number", _top("sweep_dir", 3), "sweep_dir is an integer, not a string"),
]
READERS = (["summary", "F"], ["report", "F", "-o", "O"], ["compare", "F", "F"])


@pytest.mark.parametrize(
    ("edit", "problem"), [c[1:] for c in RECORD_CASES], ids=[c[0] for c in RECORD_CASES]
)
def test_a_tampered_sweep_json_is_one_line_naming_the_field_for_every_reader(
    record: dict[str, Any], tmp_path: Path, edit: Edit, problem: str
) -> None:
    tampered = copy.deepcopy(record)
    edit(tampered)
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(tampered), encoding="utf-8")
    expected = f"failed to read sweep {path}: invalid sweep record: {problem} ({HINT})\n"
    for reader in READERS:
        names = {"F": str(tmp_path), "O": str(tmp_path / "page.html")}
        result = invoke(["profile", *(names.get(a, a) for a in reader)])
        assert (result.status, result.stdout, result.stderr) == (1, "", expected), reader
    assert not (tmp_path / "page.html").exists()


def test_the_record_a_sweep_writes_passes_and_so_does_one_without_newer_fields(
    record: dict[str, Any], tmp_path: Path
) -> None:
    assert record_problem(record) is None
    older = copy.deepcopy(record)  # a record from before threads, timing and device memory
    for row in older["points"].values():
        for key in ("threads", "amp_effective", "device_memory_mb", "reused"):
            row.pop(key)
    del older["num_reused"], older["num_interrupted"], older["num_missing"]
    (tmp_path / "sweep.json").write_text(json.dumps(older), encoding="utf-8")
    result = invoke(["profile", "summary", str(tmp_path)])
    assert result.status == 0 and result.stderr == ""
    assert result.stdout.splitlines()[-1] == "1 of 5 points failed"


# --- point folders: an unusable value fails its point, the sweep reads on -------------------


def _edit_file(path: Path, edit: Callable[[dict[str, Any]], object]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _set(*keys_and_value: Any) -> Callable[[dict[str, Any]], None]:
    *keys, last, value = keys_and_value

    def edit(data: dict[str, Any]) -> None:
        for key in keys:
            data = data[key]
        data[last] = value

    return edit


PROFILE = "infer/profile.json"
FOLDER_CASES: list[tuple[str, str, Callable[[dict[str, Any]], None], str]] = [
    (
        "imgsz superscript",
        "point.json",
        _set("config", "imgsz", "²"),
        "point.json config.imgsz is a string, not an integer",
    ),
    (
        "batch 10**30",
        "point.json",
        _set("config", "batch", 10**30),
        "point.json config.batch is 1e+30 (out of range 1..1048576, or -1 for auto)",
    ),
    (
        "overrides object",
        "point.json",
        _set("overrides", {"a": 1}),
        "point.json overrides is an object, not a list",
    ),
    (
        "status unknown",
        "status.json",
        _set("status", "done"),
        "status.json status is 'done', not one of ok, failed, interrupted, missing",
    ),
    (
        "reason list",
        "status.json",
        _set("reason", ["x"]),
        "status.json reason is a list, not a string",
    ),
    (
        "point time negative",
        "status.json",
        _set("point_s", -2.5),
        "status.json point_s is -2.5 (out of range 0..1e+15)",
    ),
    (
        "img/s 1e308",
        PROFILE,
        _set("metrics", "img_per_s", 1e308),
        f"{PROFILE} metrics.img_per_s is 1e+308 (out of range 0 or 1e-06..1e+15)",
    ),
    (
        "contended text",
        PROFILE,
        _set("metrics", "contended", "yes"),
        f"{PROFILE} metrics.contended is a string, not a boolean",
    ),
    (
        "verdict number",
        PROFILE,
        _set("verdict", "bound", 5),
        f"{PROFILE} verdict.bound is an integer, not a string",
    ),
    (
        "amp ran text",
        PROFILE,
        _set("run", "amp", "on"),
        f"{PROFILE} run.amp is a string, not a boolean",
    ),
    (
        "device memory beyond a float",
        PROFILE,
        _set("environment", {"device_memory_bytes": 10**400}),
        f"{PROFILE} environment.device_memory_bytes is an integer beyond 1e+308 "
        "(out of range 0..18446744073709551615)",
    ),
]


@pytest.mark.parametrize(
    ("leaf", "edit", "reason"), [c[1:] for c in FOLDER_CASES], ids=[c[0] for c in FOLDER_CASES]
)
def test_an_unusable_value_in_a_point_folder_fails_that_point_and_the_sweep_reads(
    tmp_path: Path, leaf: str, edit: Callable[[dict[str, Any]], None], reason: str
) -> None:
    make_point(tmp_path, 1, 64, 50.0)
    make_point(tmp_path, 2, 64, 80.0)
    _edit_file(tmp_path / "b2_s64_amp1" / leaf, edit)
    rows = collect_points(tmp_path, point_folders(tmp_path))
    bad = to_plain(rows["b2_s64_amp1"])
    assert isinstance(bad, dict)
    assert (bad["status"], bad["code"], bad["reason"]) == ("failed", INVALID, reason)
    assert (bad["profile"], bad["metrics"], bad["verdict"]) == (None, {}, None)
    # the axes are carried once they passed: not when point.json itself is the problem
    assert bad["batch"] == (None if leaf == "point.json" else 2)
    summary = invoke(["profile", "summary", str(tmp_path)])
    assert summary.status == 0 and summary.stderr == ""
    assert summary.stdout.splitlines()[2].endswith(f"{INVALID}: {reason}")
    page = invoke(["profile", "report", str(tmp_path), "-o", str(tmp_path / "page.html")])
    assert page.status == 0, page.stderr
    written = write_report(tmp_path).record  # what the sweep writes, it reads back
    assert read_sweep_record(tmp_path / "sweep.json") == written
    assert written.recommended == {"64": "b1_s64_amp1"}


def test_recommend_orders_imgsz_keys_that_are_no_ascii_number() -> None:
    # "²".isdigit() is true and int("²") fails: the order once crashed `summary`
    points = {  # built in memory: no reader gives a row such an imgsz, `recommend` copes
        name: SweepRow(status="ok", imgsz=imgsz, metrics=HeadlineMetrics(img_per_s=1.0))  # type: ignore[arg-type]
        for name, imgsz in (("a", "²"), ("b", 640), ("c", 320))
    }
    assert list(recommend(points).items()) == [("²", "a"), ("320", "c"), ("640", "b")]


def test_an_auto_fit_batch_is_a_batch_a_sweep_writes(tmp_path: Path) -> None:
    make_point(tmp_path, 1, 64, 50.0)
    _edit_file(tmp_path / "b1_s64_amp1" / "point.json", _set("config", "batch", -1))
    written = write_report(tmp_path).record
    assert (written.points["b1_s64_amp1"].status, written.num_ok) == ("ok", 1)
    assert written.points["b1_s64_amp1"].batch == -1
    assert read_sweep_record(tmp_path / "sweep.json") == written
