"""Profile files: atomic saves, `.gz`, stdin, sniffing and one-line load errors (files.py)."""

from __future__ import annotations

import gzip
import io
import json
import os
import sys
from pathlib import Path
from typing import TypeVar

import pytest

from libreyolo.document import files
from libreyolo.document.codec import to_builtins, to_json_bytes
from libreyolo.document.model import Profile, RunInfo, Tool
from libreyolo.errors import (
    AnalysisError,
    MissingFileError,
    ProfileError,
    SchemaTooNewError,
    UsageError,
)
from tests.fixture_files import fixture_dir

INVALID_HINT = "the file is not a valid libreyolo.profile/v2 document"
E = TypeVar("E", bound=ProfileError)


def _profile(batch: int = 8) -> Profile:
    return Profile(
        kind="infer",
        created="2025-01-02T03:04:05Z",
        tool=Tool(version="2.0.0"),
        run=RunInfo(mode="inference", batch=batch),
        metrics={"img_per_s": 12.5, "bound": "compute"},
    )


def _write(tmp_path: Path, name: str, data: bytes | str) -> str:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return str(path)


def _load_error(path: str, kind: type[E]) -> E:
    with pytest.raises(kind) as caught:
        files.load(path)
    assert type(caught.value) is kind
    return caught.value


# --- save -----------------------------------------------------------------------------------


def test_save_writes_canonical_bytes_and_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "profile.json"
    assert files.save(_profile(), target) == target
    assert target.read_bytes() == to_json_bytes(_profile())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.json"]


def test_save_creates_missing_parent_directories(tmp_path: Path) -> None:
    target = tmp_path / "run" / "a" / "profile.json"
    files.save(_profile(), target)
    assert files.load(str(target)) == _profile()


def test_save_refuses_to_overwrite_by_default(tmp_path: Path) -> None:
    target = tmp_path / "profile.json"
    target.write_bytes(b"old")
    with pytest.raises(UsageError) as caught:
        files.save(_profile(), target)
    assert str(caught.value) == f"refusing to overwrite {target}"
    assert caught.value.hint == "choose another path"
    assert target.read_bytes() == b"old"


def test_save_overwrite_replaces_the_file(tmp_path: Path) -> None:
    target = tmp_path / "profile.json"
    files.save(_profile(batch=1), target)
    files.save(_profile(batch=2), target, overwrite=True)
    assert files.load(str(target)).run.batch == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.json"]


def test_save_failed_replace_keeps_old_file_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "profile.json"
    files.save(_profile(batch=1), target)

    def fail(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="No space left on device"):
        files.save(_profile(batch=2), target, overwrite=True)
    assert target.read_bytes() == to_json_bytes(_profile(batch=1))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.json"]


def test_save_failed_write_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="Input/output error"):
        files.save(_profile(), tmp_path / "profile.json")
    assert list(tmp_path.iterdir()) == []


def test_save_gz_round_trip(tmp_path: Path) -> None:
    target = tmp_path / "profile.json.gz"
    files.save(_profile(), target)
    assert gzip.decompress(target.read_bytes()) == to_json_bytes(_profile())
    assert files.load(str(target)) == _profile()
    assert files.sniff(str(target)) == "profile"


def test_save_gz_same_profile_same_bytes(tmp_path: Path) -> None:
    files.save(_profile(), tmp_path / "a.json.gz")
    files.save(_profile(), tmp_path / "b.json.gz")
    assert (tmp_path / "a.json.gz").read_bytes() == (tmp_path / "b.json.gz").read_bytes()


# --- load and sniff -------------------------------------------------------------------------


def test_load_reads_stdin_for_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(to_json_bytes(_profile())), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    assert files.load("-") == _profile()


def test_sniff_dash_is_profile() -> None:
    assert files.sniff("-") == "profile"


def test_sniff_gpu_traces_are_traces() -> None:
    traces = sorted(fixture_dir("gpu_traces").glob("*.json.gz"))
    assert len(traces) == 4
    assert {path.name: files.sniff(str(path)) for path in traces} == {
        path.name: "trace" for path in traces
    }


def test_sniff_v1_and_v2_profiles_are_profiles(tmp_path: Path) -> None:
    v1 = sorted(fixture_dir("reference_v1").glob("*.json"))
    assert len(v1) == 4
    assert all(files.sniff(str(path)) == "profile" for path in v1)
    files.save(_profile(), tmp_path / "profile.json")
    assert files.sniff(str(tmp_path / "profile.json")) == "profile"


def test_load_does_not_rewrite_a_v1_file(tmp_path: Path) -> None:
    source = fixture_dir("reference_v1") / "infer_b1.profile.json"
    copy = tmp_path / "profile.json"
    copy.write_bytes(source.read_bytes())
    files.load(str(copy))
    assert copy.read_bytes() == source.read_bytes()


# --- errors: class and exact one-line message -----------------------------------------------


def test_load_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.json")
    err = _load_error(path, MissingFileError)
    assert str(err) == f"not found: {path}"


def test_sniff_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.json")
    with pytest.raises(MissingFileError) as caught:
        files.sniff(path)
    assert str(caught.value) == f"not found: {path}"


def test_load_directory(tmp_path: Path) -> None:
    err = _load_error(str(tmp_path), MissingFileError)
    assert str(err) == f"not a file: {tmp_path} is a directory"


def test_load_empty_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "empty.json", "")
    assert str(_load_error(path, AnalysisError)) == f"failed to analyse {path}: the file is empty"


def test_sniff_whitespace_only_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "blank.json", " \n\t\n")
    with pytest.raises(AnalysisError) as caught:
        files.sniff(path)
    assert str(caught.value) == f"failed to analyse {path}: the file is empty"


def test_load_truncated_json(tmp_path: Path) -> None:
    source = fixture_dir("reference_v1") / "infer_b1.profile.json"
    path = _write(tmp_path, "truncated.json", source.read_bytes()[:5000])
    assert str(_load_error(path, AnalysisError)) == (
        f"failed to analyse {path}: not valid JSON "
        "(Unterminated string starting at: line 1 column 4988 (char 4987))"
    )


def test_load_truncated_gz(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.json.gz", gzip.compress(to_json_bytes(_profile()))[:40])
    err = _load_error(path, AnalysisError)
    assert str(err).startswith(f"failed to analyse {path}: ")
    assert "\n" not in str(err)


def test_load_not_json(tmp_path: Path) -> None:
    path = _write(tmp_path, "notes.json", "hello\n")
    assert str(_load_error(path, AnalysisError)) == (
        f"failed to analyse {path}: not valid JSON (Expecting value: line 1 column 1 (char 0))"
    )


def test_load_json_list(tmp_path: Path) -> None:
    path = _write(tmp_path, "list.json", "[1, 2]")
    assert str(_load_error(path, AnalysisError)) == (
        f"failed to analyse {path}: not a libreyolo profile (no schema tag)"
    )


def test_load_empty_object(tmp_path: Path) -> None:
    path = _write(tmp_path, "empty_obj.json", "{}")
    assert str(_load_error(path, AnalysisError)) == (
        f"failed to analyse {path}: not a libreyolo profile (no schema tag)"
    )


def test_load_unknown_schema_tag(tmp_path: Path) -> None:
    path = _write(tmp_path, "other.json", '{"schema": "acme.report/v1"}')
    assert str(_load_error(path, AnalysisError)) == (
        f"failed to analyse {path}: unknown profile schema 'acme.report/v1'"
    )


def test_load_newer_schema(tmp_path: Path) -> None:
    path = _write(tmp_path, "v3.json", '{"schema": "libreyolo.profile/v3", "kind": "train"}')
    err = _load_error(path, SchemaTooNewError)
    assert str(err) == f"failed to analyse {path}: profile schema v3 is newer than v2"
    assert err.hint == "upgrade libreyolo to read this file"
    assert err.status == 1


def test_load_v2_mistyped_field(tmp_path: Path) -> None:
    raw = to_builtins(_profile())
    raw["run"]["mode"] = 3
    path = _write(tmp_path, "mistyped.json", json.dumps(raw))
    err = _load_error(path, AnalysisError)
    assert str(err) == (
        f"failed to analyse {path}: invalid profile: Expected `str`, got `int` - at `$.run.mode`"
    )
    assert err.hint == INVALID_HINT


def test_load_v2_missing_required_field(tmp_path: Path) -> None:
    raw = to_builtins(_profile())
    del raw["tool"]
    path = _write(tmp_path, "missing.json", json.dumps(raw))
    err = _load_error(path, AnalysisError)
    assert str(err) == (
        f"failed to analyse {path}: invalid profile: Object missing required field `tool`"
    )
    assert err.hint == INVALID_HINT


def test_load_v2_unknown_keys_are_tolerated(tmp_path: Path) -> None:
    raw = to_builtins(_profile())
    raw["added_in_v2_1"] = {"x": 1}
    raw["run"]["new_field"] = "ok"
    path = _write(tmp_path, "additive.json", json.dumps(raw))
    assert files.load(path) == _profile()


def test_save_gives_the_file_a_normal_mode(tmp_path: Path) -> None:
    import os

    path = files.save(_profile(), tmp_path / "mode.json")
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask


@pytest.mark.parametrize(("kind", "mode"), [("train", "inference"), ("infer", "training")])
def test_kind_and_run_mode_must_agree(tmp_path: Path, kind: str, mode: str) -> None:
    raw = to_builtins(_profile())
    raw["kind"], raw["run"]["mode"] = kind, mode
    path = _write(tmp_path, "p.json", json.dumps(raw))
    err = _load_error(path, AnalysisError)
    assert err.message == (
        f"failed to analyse {path}: invalid profile: kind '{kind}' does not match run.mode '{mode}'"
    )
    assert err.hint == INVALID_HINT
