"""v2 files written before the top-level `notes` list read the same as current ones
(migrations.lift_notes): the run's notes are lifted out of `run.config.notes`, and their copies
out of `trace.notes`, which keeps the analyser's own caveats."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import msgspec.structs
import pytest

from libreyolo.document import files
from libreyolo.document.codec import to_builtins
from libreyolo.document.migrations import lift_notes, upgrade
from libreyolo.document.model import Profile, TraceAnalysis
from tests.conftest import invoke
from tests.profiles import training_profile

CAVEATS = ["no ProfilerStep: the whole trace is one window"]
ROUNDED = "--imgsz 100 rounded to 128 (a multiple of the model stride 32)"
RUN_NOTES = [
    "random weights: LibreYOLO9t.pt is not available (timings real, detections not)",
    "--half has no effect on cpu: the forward ran in float32",
]


def _current(*, traced: bool) -> Profile:
    """A current profile: the run's notes at the top level, the analyser's in the trace."""
    trace = TraceAnalysis(
        source="whole_trace", num_steps=0, window_ms=160.0, has_gpu=False, notes=list(CAVEATS)
    )
    profile = training_profile("cpu", trace=trace if traced else None)
    return msgspec.structs.replace(profile, notes=[*RUN_NOTES, ROUNDED])


def _old_shape(profile: Profile) -> dict[str, Any]:
    """`profile` as the writer before the top-level list stored it: every note in
    `run.config.notes` (the rounding note last, added after the collector had finished) and,
    with a trace, the collector's notes appended to the analyser's in `trace.notes`."""
    raw = to_builtins(profile)
    del raw["notes"]
    raw["run"]["config"]["notes"] = [*RUN_NOTES, ROUNDED]
    if raw["trace"] is not None:
        raw["trace"]["notes"] = [*CAVEATS, *RUN_NOTES]
    return raw


def _write(path: Path, raw: dict[str, Any]) -> str:
    path.write_text(json.dumps(raw), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("traced", [True, False])
def test_an_old_v2_file_loads_as_the_current_document(traced: bool, tmp_path: Path) -> None:
    current = _current(traced=traced)
    old = files.load(_write(tmp_path / "old.json", _old_shape(current)))
    assert old == current
    assert old.notes == [*RUN_NOTES, ROUNDED] and "notes" not in old.run.config
    if traced:
        assert old.trace is not None and old.trace.notes == CAVEATS
    else:
        assert old.trace is None


@pytest.mark.parametrize("traced", [True, False])
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_an_old_v2_file_summarises_as_the_current_one(
    traced: bool, json_flag: list[str], tmp_path: Path
) -> None:
    current = _current(traced=traced)
    new_path = _write(tmp_path / "new.json", to_builtins(current))
    old_path = _write(tmp_path / "old.json", _old_shape(current))
    new = invoke(["profile", "summary", new_path, *json_flag])
    old = invoke(["profile", "summary", old_path, *json_flag])
    assert (old.status, new.status) == (0, 0)
    assert old.stdout == new.stdout.replace(new_path, old_path)
    if not json_flag:
        lines = old.stdout.splitlines()
        assert [f"note: {note}" for note in [*RUN_NOTES, ROUNDED]] == [
            line for line in lines if line.startswith("note: ") and "noisy" not in line
        ]
        caveats = [line for line in lines if line.startswith("trace note: ")]
        assert caveats == ([f"trace note: {CAVEATS[0]}"] if traced else [])


def test_the_lift_leaves_its_input_alone_and_a_current_document_as_it_is() -> None:
    raw = _old_shape(_current(traced=True))
    before = copy.deepcopy(raw)
    lifted = upgrade(raw, origin="old.json")
    assert raw == before
    assert lifted["notes"] == [*RUN_NOTES, ROUNDED]
    current = to_builtins(_current(traced=True))
    assert lift_notes(current) is current


def test_a_config_note_already_in_the_trace_is_kept_once() -> None:
    raw = _old_shape(_current(traced=True))
    raw["trace"]["notes"] = [*RUN_NOTES, *CAVEATS, RUN_NOTES[0]]  # any order, even twice
    lifted = lift_notes(raw)
    assert lifted["notes"] == [*RUN_NOTES, ROUNDED]
    assert isinstance(lifted["trace"], dict) and lifted["trace"]["notes"] == CAVEATS


def test_notes_that_are_not_a_list_of_strings_stay_in_the_config() -> None:
    raw = _old_shape(_current(traced=False))
    raw["run"]["config"]["notes"] = "a free-form config value"
    assert lift_notes(raw) is raw
    mixed = _old_shape(_current(traced=False))
    mixed["run"]["config"]["notes"] = ["a note", 3]
    assert lift_notes(mixed) is mixed


def test_an_old_file_without_config_notes_reads_with_no_notes(tmp_path: Path) -> None:
    raw = _old_shape(_current(traced=True))
    del raw["run"]["config"]["notes"]
    loaded = files.load(_write(tmp_path / "old.json", raw))
    assert loaded.notes == []
    assert loaded.trace is not None and loaded.trace.notes == [*CAVEATS, *RUN_NOTES]
