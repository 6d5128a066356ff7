"""The published sweep schema (`sweep.schema.json`): generated from `sweep_model.py`, and every
file a real sweep writes validates against its own definition, while a record holding a value
the readers refuse does not."""

from __future__ import annotations

import copy
import json
import subprocess
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest

from libreyolo.analysis.sweep import sweep_record
from libreyolo.document.codec import document_bytes
from libreyolo.document.convert import to_plain
from libreyolo.document.sweep_files import collect_points, point_folders
from libreyolo.sweep.report import write_report
from tests.conftest import invoke
from tests.document.test_tune_io import FIELD_CASES, hand_written
from tests.scripts_module import script_module
from tests.sweep.helpers import tiny_sweep_argv
from tests.sweep.test_record_checks import RECORD_CASES
from tests.sweep.test_report import _plan, make_point, make_sweep
from tests.tune_records import knee_record

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "libreyolo" / "document" / "sweep.schema.json"
DEFINITION = {
    "point.json": "PointRequest",
    "status.json": "PointStatus",
    "sweep_plan.json": "SweepPlan",
    "sweep.json": "SweepRecord",
    "tune.json": "TuneRecord",
}
# What a JSON Schema cannot state: that a recommended name is a point of the record, and that
# 2.0 is no integer (JSON Schema counts it one: the same number; the readers refuse a float).
CROSS_REFERENCES = {"recommended unknown point", "threads float"}
# tune.json's cross references (a series' batch one of its path's, a recommended point one of
# the paths') and an integer refusing 2.0, as above.
TUNE_CROSS_REFERENCES = {
    "batch float",
    "series batch not measured",
    "recommended point unknown",
    "recommended point with controls",
    "series too many",  # maxItems holds; validating 4097 series costs seconds
}


def _gen_schema_script() -> ModuleType:
    return script_module("gen_schema")


@cache
def _validator(definition: str) -> jsonschema.Draft202012Validator:
    """A validator of one file: the schema's definitions, `definition` at the top."""
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    one = {"$schema": schema["$schema"], "$defs": schema["$defs"]}
    return jsonschema.Draft202012Validator(one | {"$ref": f"#/$defs/{definition}"})


def _errors(data: object, definition: str) -> list[str]:
    return [
        f"{list(e.absolute_path)}: {e.message}" for e in _validator(definition).iter_errors(data)
    ]


def _sweep_files(root: Path) -> dict[str, Any]:
    """Every sweep file under `root` (the profiles aside), by path relative to it."""
    found = {}
    for path in sorted(root.rglob("*.json")):
        if path.name in DEFINITION:
            found[path.relative_to(root).as_posix()] = json.loads(path.read_text("utf-8"))
    return found


def _check_folder(root: Path) -> dict[str, Any]:
    """Validate each sweep file under `root` against its definition; the files, by path."""
    files = _sweep_files(root)
    for name, data in files.items():
        assert _errors(data, DEFINITION[Path(name).name]) == [], name
    summary = invoke(["profile", "summary", str(root), "--json"])
    assert summary.status == 0, summary.stderr
    assert _errors(summary.json(), "SweepRecord") == []
    return files


def test_the_checked_in_sweep_schema_is_the_generated_one() -> None:
    assert SCHEMA_FILE.read_bytes() == _gen_schema_script().render_sweep()


def test_the_sweep_schema_has_one_definition_per_file() -> None:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert [ref["$ref"] for ref in schema["anyOf"]] == [
        f"#/$defs/{name}" for name in DEFINITION.values()
    ]
    record = schema["$defs"]["SweepRecord"]
    assert record["required"] == ["points"]
    assert record["properties"]["schema"] == {"enum": ["libreyolo.sweep/v1"]}
    batch = schema["$defs"]["SweepRow"]["properties"]["batch"]
    assert batch == {
        "anyOf": [
            {
                "anyOf": [
                    {"maximum": 1 << 20, "minimum": 1, "type": "integer"},
                    {"const": -1},
                ]
            },
            {"type": "null"},
        ]
    }


@pytest.fixture(scope="module")
def real_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real tiny CPU sweep: two ok points and two the measurement refuses (imgsz -5)."""
    sweep_dir = tmp_path_factory.mktemp("real_sweep")
    argv = tiny_sweep_argv(sweep_dir, "batch=1,2", "imgsz=64,-5")
    # A busy host makes points contended, not their files different: no quiet host needed.
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert done.returncode == 1, done.stdout + done.stderr  # two points failed, as planned
    return sweep_dir


def test_every_file_of_a_real_sweep_validates_against_its_definition(real_sweep: Path) -> None:
    files = _check_folder(real_sweep)
    names = ("b1_s64_amp1", "b2_s64_amp1", "b1_s-5_amp1", "b2_s-5_amp1")
    expected = {"sweep.json", "sweep_plan.json"} | {
        f"{n}/{leaf}" for n in names for leaf in ("point.json", "status.json")
    }
    assert set(files) == expected
    statuses = [files[f"{n}/status.json"] for n in names]
    assert [s["status"] for s in statuses] == ["ok", "ok", "failed", "failed"]
    # the writers tag their files
    assert {files[f"{n}/point.json"]["schema"] for n in names} == {"libreyolo.sweep-point/v1"}
    assert {s["schema"] for s in statuses} == {"libreyolo.sweep-status/v1"}
    assert files["sweep.json"]["schema"] == "libreyolo.sweep/v1"


def test_the_record_of_a_stopped_sweep_validates(tmp_path: Path) -> None:
    stopped = {"status": "interrupted", "reason": "stopped by SIGINT", "code": "interrupted"}
    timing = {"measure_s": 1.5, "point_s": 2.0, "lease_wait_s": 0.0, "held_device": "cpu"}
    make_point(tmp_path, 1, 64, 50.0, status=timing)
    make_point(tmp_path, 2, 64, None)
    make_point(tmp_path, 4, 64, None, status=stopped)
    _plan(tmp_path, "b1_s64_amp1", "b2_s64_amp1", "b4_s64_amp1", "b8_s64_amp1")
    _check_folder(tmp_path)  # before sweep.json: the record the folder makes
    record = write_report(tmp_path).data
    assert [row["status"] for row in record["points"].values()] == [  # type: ignore[union-attr]
        "ok",
        "failed",
        "interrupted",
        "missing",
    ]
    _check_folder(tmp_path)


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = make_sweep(tmp_path_factory.mktemp("sweep"))
    plain = to_plain(sweep_record(str(root), collect_points(root, point_folders(root))))
    assert isinstance(plain, dict)
    return plain


@pytest.mark.parametrize(
    "edit",
    [c[1] for c in RECORD_CASES if c[0] not in CROSS_REFERENCES],
    ids=[c[0] for c in RECORD_CASES if c[0] not in CROSS_REFERENCES],
)
def test_a_record_the_readers_refuse_does_not_validate(record: dict[str, Any], edit: Any) -> None:
    assert _errors(record, "SweepRecord") == []
    tampered = copy.deepcopy(record)
    edit(tampered)
    assert _errors(tampered, "SweepRecord") != []


def test_every_tune_record_validates_and_the_tag_is_required() -> None:
    for train in (False, True):
        written = json.loads(document_bytes(knee_record(train=train)))
        assert _errors(written, "TuneRecord") == []
    data = hand_written()
    assert _errors(data, "TuneRecord") == []
    del data["schema"]  # the reader refuses a tune.json without its tag: so does the schema
    assert _errors(data, "TuneRecord") == ["[]: 'schema' is a required property"]


@pytest.mark.parametrize(
    "edit",
    [c[1] for c in FIELD_CASES if c[0] not in TUNE_CROSS_REFERENCES],
    ids=[c[0] for c in FIELD_CASES if c[0] not in TUNE_CROSS_REFERENCES],
)
def test_a_tune_record_the_reader_refuses_does_not_validate(edit: Any) -> None:
    tampered = copy.deepcopy(hand_written())
    edit(tampered)
    assert _errors(tampered, "TuneRecord") != []
