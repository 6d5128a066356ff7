"""v1 -> v2 migration on libreyolo 1.6.0's files, and the published JSON Schema (migrations.py)."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings

from libreyolo.document import files
from libreyolo.document.codec import from_builtins, to_builtins
from libreyolo.document.migrations import CURRENT, schema_version, upgrade
from libreyolo.document.model import SCHEMA, Profile
from libreyolo.errors import AnalysisError
from tests.fixture_files import fixture_file
from tests.scripts_module import script_module
from tests.strategies import profiles

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "libreyolo" / "document" / "profile.schema.json"
V1_FILES = (
    "infer_b1.profile.json",
    "infer_b4.profile.json",
    "infer_repeat.json",
    "train_cpu.profile.json",
)
V1_TABLES = {"kernels", "ops", "kernels_by_phase", "ops_by_phase", "top_kernels", "categories"}
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _v1_path(name: str) -> Path:
    return fixture_file(f"reference_v1/{name}")


def _v1_raw(name: str) -> dict[str, Any]:
    raw = json.loads(_v1_path(name).read_text(encoding="utf-8"))
    assert isinstance(raw, dict)
    return raw


def _migrated(name: str) -> Profile:
    return files.load(str(_v1_path(name)))


@cache
def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _gen_schema_script() -> ModuleType:
    return script_module("gen_schema")


# --- every v1 file --------------------------------------------------------------------------


@pytest.mark.parametrize("name", V1_FILES)
def test_load_v1_file_upgrades_to_current_schema(name: str) -> None:
    profile = _migrated(name)
    raw = _v1_raw(name)
    assert profile.schema == SCHEMA
    assert profile.created is None
    assert profile.tool.version == "1.6.0"
    assert profile.artifacts.trace == raw["trace"]
    assert profile.trace is not None
    assert profile.trace.num_steps == raw["window"]["real_steps"]
    assert profile.trace.window_ms == raw["window"]["wall_ms"]


@pytest.mark.parametrize("name", V1_FILES)
def test_upgrade_v1_keeps_verdict(name: str) -> None:
    raw = _v1_raw(name)
    verdict = _migrated(name).verdict
    assert verdict is not None
    assert (verdict.bound, verdict.why) == (raw["bound"], raw["bound_why"])


@pytest.mark.parametrize("name", V1_FILES)
def test_upgrade_v1_keeps_scalars_under_legacy_v1(name: str) -> None:
    raw = _v1_raw(name)
    legacy = _migrated(name).legacy_v1
    assert legacy is not None
    assert legacy == {k: v for k, v in raw.items() if k not in V1_TABLES | {"phases"}}


@pytest.mark.parametrize("name", V1_FILES)
def test_upgrade_v1_does_not_modify_its_input(name: str) -> None:
    raw = _v1_raw(name)
    before = copy.deepcopy(raw)
    upgrade(raw, origin=name)
    assert raw == before


@pytest.mark.parametrize("name", V1_FILES)
def test_upgrade_v1_op_times_are_inclusive(name: str) -> None:
    trace = _migrated(name).trace
    assert trace is not None and trace.ops
    assert all(op.self_ms is None for op in trace.ops)
    assert all(c.self_ms is None for op in trace.ops for c in op.phases.values())


@pytest.mark.parametrize("name", V1_FILES)
def test_upgrade_v1_notes_are_the_profiles_not_the_traces(name: str) -> None:
    profile = _migrated(name)
    assert profile.notes == ["migrated from a libreyolo 1.6.0 profile: op times are inclusive"]
    assert profile.trace is not None and profile.trace.notes == []


@pytest.mark.parametrize("name", V1_FILES)
def test_schema_file_validates_migrated_document(name: str) -> None:
    errors = [e.message for e in _validator().iter_errors(to_builtins(_migrated(name)))]
    assert errors == []


# --- values kept ----------------------------------------------------------------------------


def test_upgrade_v1_inference_keeps_metrics_and_latency() -> None:
    profile = _migrated("infer_b1.profile.json")
    assert profile.metrics == _v1_raw("infer_b1.profile.json")["metrics"]
    assert profile.metrics["forward_ms"] == 250.833
    assert profile.metrics["img_per_s"] == 7.81
    assert profile.legacy_v1 is not None
    assert profile.legacy_v1["latency"] == {
        "p50_ms": 120.979,
        "p90_ms": 144.509,
        "p99_ms": 151.335,
        "mean_ms": 127.971,
        "min_ms": 110.62,
        "max_ms": 151.335,
        "n": 10,
    }
    assert profile.window.num_unsynced == 10


def test_upgrade_v1_inference_run_info() -> None:
    profile = _migrated("infer_b1.profile.json")
    assert profile.kind == "infer"
    assert profile.run.mode == "inference"
    assert (profile.run.model, profile.run.weights) == ("LibreYOLO9t.pt", "LibreYOLO9t.pt")
    assert (profile.run.device, profile.run.batch, profile.run.imgsz) == ("cpu", 1, 640)
    assert profile.run.amp is False
    assert profile.run.config["max_det"] == 300


def test_upgrade_v1_ops_become_window_totals() -> None:
    trace = _migrated("infer_b1.profile.json").trace
    assert trace is not None and trace.num_steps == 6
    conv = next(op for op in trace.ops if op.name == "aten::conv2d")
    assert conv.total_ms == pytest.approx(76.1795 * 6, abs=1e-9)
    assert conv.num_calls == 227 * 6
    assert conv.phases["forward"].num_calls == 227 * 6
    assert len(trace.ops) == len(_v1_raw("infer_b1.profile.json")["ops"])


def test_upgrade_v1_inference_phases_and_no_kernels() -> None:
    trace = _migrated("infer_b1.profile.json").trace
    assert trace is not None
    assert [(p.name, p.num_ops, p.wall_ms_per_step) for p in trace.phases] == [
        ("preprocess", 3 * 6, None),
        ("forward", 4957 * 6, None),
        ("postprocess", 22 * 6, None),
    ]
    assert trace.kernels == [] and trace.categories == []
    assert trace.has_gpu is False
    assert trace.memory.peak_allocated_bytes is None


def test_upgrade_v1_training_file_without_mode_is_training() -> None:
    raw = _v1_raw("train_cpu.profile.json")
    assert "mode" not in raw
    profile = _migrated("train_cpu.profile.json")
    assert (profile.kind, profile.run.mode) == ("train", "training")
    assert (profile.run.model, profile.run.weights) == ("YOLOv9-t", None)
    assert (profile.run.batch, profile.run.imgsz, profile.run.amp) == (4, 320, True)
    assert profile.metrics == raw["metrics"]


def test_upgrade_v1_training_phases() -> None:
    trace = _migrated("train_cpu.profile.json").trace
    assert trace is not None and trace.num_steps == 2
    phases = {p.name: p for p in trace.phases}
    assert list(phases) == ["dataload", "to_device", "forward", "backward", "optimizer"]
    assert phases["forward"].wall_ms_per_step == 438.94
    assert phases["forward"].num_ops == 9748 * 2
    assert phases["dataload"].wall_ms_per_step == 14.4
    assert phases["forward"].cpu_ms is None


def test_upgrade_v1_training_verdict_kept_verbatim() -> None:
    verdict = _migrated("train_cpu.profile.json").verdict
    assert verdict is not None
    assert verdict.bound == "host / launch"
    assert verdict.why == (
        "GPU only ~0% busy — fed too slowly: 0 kernels/step at ~0us each plus host overhead"
    )
    assert (verdict.evidence, verdict.levers) == ({}, [])


def test_upgrade_v1_repeat_keeps_trials_and_headline_mean() -> None:
    profile = _migrated("infer_repeat.json")
    assert [t.metrics for t in profile.trials] == [{"img_per_s": 9.05}, {"img_per_s": 6.01}]
    assert [t.index for t in profile.trials] == [0, 1]
    assert profile.metrics["img_per_s"] == 7.53
    assert profile.metrics["throughput_img_s"] == 7.53
    assert profile.metrics["img_per_s_std"] == 1.52
    assert profile.metrics["img_per_s_n"] == 2


def test_upgrade_v1_repeat_keeps_v1_metric_map_in_legacy() -> None:
    legacy = _migrated("infer_repeat.json").legacy_v1
    assert legacy is not None
    assert legacy["metrics"]["img_per_s"] == 6.01  # v1 left the last trial here
    assert legacy["img_per_s_trials"] == [9.05, 6.01]


def test_upgrade_v1_single_run_has_no_trials() -> None:
    assert _migrated("infer_b4.profile.json").trials == []


# --- versions -------------------------------------------------------------------------------


def test_schema_version_reads_tags() -> None:
    assert schema_version({"schema": "libreyolo.profile.analysis/v1"}, origin="x") == 1
    assert schema_version({"schema": SCHEMA}, origin="x") == CURRENT == 2
    assert schema_version({"schema": "libreyolo.profile/v7"}, origin="x") == 7


def test_schema_version_rejects_non_string_tag() -> None:
    with pytest.raises(AnalysisError) as caught:
        schema_version({"schema": 2}, origin="p.json")
    assert str(caught.value) == "failed to analyse p.json: not a libreyolo profile (no schema tag)"


def test_upgrade_version_below_one_is_unknown_schema() -> None:
    with pytest.raises(AnalysisError) as caught:
        upgrade({"schema": "libreyolo.profile/v0"}, origin="p.json")
    assert (
        str(caught.value)
        == "failed to analyse p.json: unknown profile schema 'libreyolo.profile/v0'"
    )


@PROPERTY
@given(profiles())
def test_upgrade_current_is_identity_property(profile: Profile) -> None:
    raw = to_builtins(profile)
    upgraded = upgrade(raw, origin="memory")
    assert upgraded == raw
    assert from_builtins(upgraded, origin="memory") == profile


@PROPERTY
@given(profiles())
def test_schema_file_validates_generated_profiles_property(profile: Profile) -> None:
    assert [e.message for e in _validator().iter_errors(to_builtins(profile))] == []


# --- the published schema -------------------------------------------------------------------


def test_schema_file_matches_generator() -> None:
    assert SCHEMA_FILE.read_bytes() == _gen_schema_script().render()


def test_schema_file_pins_tag_and_requires_envelope() -> None:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    profile = schema["$defs"]["Profile"]
    assert schema["$ref"] == "#/$defs/Profile"
    assert profile["properties"]["schema"]["const"] == SCHEMA
    assert set(profile["required"]) == {"schema", "kind", "created", "tool", "run"}


def test_schema_file_rejects_other_tags_and_mistyped_fields() -> None:
    raw = to_builtins(_migrated("infer_b1.profile.json"))
    assert not _validator().is_valid(raw | {"schema": "libreyolo.profile/v3"})
    assert not _validator().is_valid(raw | {"run": raw["run"] | {"mode": 3}})


def test_upgrade_v1_without_a_trace_says_nothing_was_traced() -> None:
    from libreyolo.document.migrations import NO_TRACE_NOTE

    traced = upgrade(_v1_raw("infer_b1.profile.json"), origin="x")
    assert isinstance(traced["notes"], list) and NO_TRACE_NOTE not in traced["notes"]
    raw = _v1_raw("infer_b1.profile.json") | {"trace": None}  # a 1.6.0 --no-trace fallback
    untraced = upgrade(raw, origin="x")
    assert isinstance(untraced["notes"], list) and NO_TRACE_NOTE in untraced["notes"]
    assert isinstance(untraced["artifacts"], dict)
    assert untraced["artifacts"]["trace"] is None


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("kernels", 5, "expected a list, got int"),
        ("ops", [None], "expected an object in a list, got NoneType"),
        ("window", [1], "expected an object, got list"),
        ("kernels_by_phase", {"forward": "x"}, "expected a list, got str"),
    ],
)
def test_upgrade_v1_of_the_wrong_shape_names_what_it_expected(
    key: str, value: object, reason: str
) -> None:
    raw = _v1_raw("infer_b1.profile.json") | {key: value}
    with pytest.raises(AnalysisError) as caught:
        upgrade(raw, origin="p.json")
    assert str(caught.value) == f"failed to analyse p.json: invalid schema v1 profile ({reason})"
