"""Canonical JSON and the Profile <-> JSON round trip (libreyolo/document/codec.py)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings

from libreyolo.document.codec import from_builtins, to_builtins, to_json_bytes
from libreyolo.document.mode import Mode
from libreyolo.document.model import SCHEMA, Profile, RunInfo, Tool
from libreyolo.errors import AnalysisError
from tests.strategies import profiles

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _minimal() -> Profile:
    return Profile(
        kind="train", created=None, tool=Tool(version="2.0.0"), run=RunInfo(mode="training")
    )


def _decode(data: bytes) -> Profile:
    """The load path: JSON -> builtins -> validated Profile."""
    return from_builtins(msgspec.json.decode(data), origin="memory")


def _keys_sorted(node: Any) -> bool:
    if isinstance(node, dict):
        return list(node) == sorted(node) and all(_keys_sorted(v) for v in node.values())
    if isinstance(node, list):
        return all(_keys_sorted(v) for v in node)
    return True


def test_to_json_bytes_canonical_layout() -> None:
    data = to_json_bytes({"b": 1, "a": {"d": [1, 2.5], "c": "µs"}, "e": [], "f": {}})
    expected = (
        '{\n  "a": {\n    "c": "µs",\n    "d": [\n      1,\n      2.5\n    ]\n  },\n'
        '  "b": 1,\n  "e": [],\n  "f": {}\n}\n'
    )
    assert data == expected.encode("utf-8")


def test_to_json_bytes_same_input_same_bytes() -> None:
    assert to_json_bytes(_minimal()) == to_json_bytes(_minimal())


def test_to_json_bytes_sorts_profile_fields() -> None:
    raw = json.loads(to_json_bytes(_minimal()))
    assert list(raw) == sorted(Profile.__struct_fields__)
    assert raw["schema"] == SCHEMA
    assert raw["run"]["mode"] == "training"


def test_kind_reads_as_the_mode_member_and_writes_the_stored_strings() -> None:
    profile = Profile(
        kind=Mode.INFER, created=None, tool=Tool(version="2"), run=RunInfo(mode=Mode.INFER.noun)
    )
    data = to_json_bytes(profile)
    raw = json.loads(data)
    assert (raw["kind"], raw["run"]["mode"]) == ("infer", "inference")
    loaded = _decode(data)
    assert loaded.kind is Mode.INFER and loaded == profile


def test_a_kind_given_as_a_string_is_the_mode_member() -> None:
    assert _minimal().kind is Mode.TRAIN


def test_an_unknown_kind_is_one_error_line() -> None:
    raw = json.loads(to_json_bytes(_minimal())) | {"kind": "training"}
    with pytest.raises(AnalysisError, match=r"Invalid enum value 'training' - at `\$.kind`$"):
        from_builtins(raw, origin="memory")


def test_to_json_bytes_ends_with_one_newline() -> None:
    data = to_json_bytes(_minimal())
    assert data.endswith(b"}\n")
    assert not data.endswith(b"\n\n")


def test_to_builtins_sorts_keys_and_matches_json() -> None:
    profile = _minimal()
    raw = to_builtins(profile)
    assert list(raw) == sorted(raw)
    assert raw == json.loads(to_json_bytes(profile))


def test_from_builtins_mistyped_field_is_one_line_analysis_error() -> None:
    raw = to_builtins(_minimal())
    raw["run"]["mode"] = "testing"
    with pytest.raises(AnalysisError) as caught:
        from_builtins(raw, origin="x.json")
    assert str(caught.value) == (
        "failed to analyse x.json: invalid profile: Invalid enum value 'testing' - at `$.run.mode`"
    )
    assert caught.value.hint == "the file is not a valid libreyolo.profile/v2 document"


@PROPERTY
@given(profiles())
def test_codec_round_trip_property(profile: Profile) -> None:
    assert _decode(to_json_bytes(profile)) == profile


@PROPERTY
@given(profiles())
def test_to_json_bytes_idempotent_property(profile: Profile) -> None:
    data = to_json_bytes(profile)
    assert to_json_bytes(_decode(data)) == data


@PROPERTY
@given(profiles())
def test_to_json_bytes_sorted_keys_property(profile: Profile) -> None:
    data = to_json_bytes(profile)
    assert data.endswith(b"\n") and not data.endswith(b"\n\n")
    assert _keys_sorted(json.loads(data))
    assert json.loads(data) == to_builtins(profile)
