"""`profile log --tensorboard` stays inside its folder whatever the point names say: a name
from an edited `sweep.json` becomes one folder directly under the log folder, never a path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from libreyolo.analysis.tracked import TrackedRun
from libreyolo.errors import DestinationError
from libreyolo.tracking.tensorboard_sink import MAX_FOLDER_BYTES, log_tensorboard, run_folder
from tests.conftest import invoke

HOSTILE = ["../../escaped", "/tmp/absolute", "a/b", "..", ".", "", "nul\x00byte", "\ud800"]


def _run(name: str, index: int = 0) -> TrackedRun:
    return TrackedRun(name, index, "ok", None, {}, {"img_per_s": 1.0}, ())


def test_every_name_is_one_folder_directly_under_the_log_folder(tmp_path: Path) -> None:
    board = tmp_path / "board"
    names = [*HOSTILE, "x" * 300, "a_b", "b1_s64_amp1"]
    written = log_tensorboard(str(board), [_run(n, i) for i, n in enumerate(names)])
    folders = [Path(written[name]) for name in names]
    assert all(folder.parent == board for folder in folders)
    assert len({folder.name for folder in folders}) == len(names)  # a_b and a/b both kept
    assert {p.name for p in board.iterdir()} == {f.name for f in folders}
    assert [p for p in tmp_path.iterdir() if p != board] == []  # nothing written beside it
    assert written["b1_s64_amp1"] == str(board / "b1_s64_amp1")  # a plain name is kept
    assert all(len(f.name.encode()) <= MAX_FOLDER_BYTES for f in folders)


def test_folder_names() -> None:
    taken: set[str] = set()
    assert [run_folder(n, taken) for n in ("../x", "..", "", "a/b", "a_b", "a_b")] == [
        ".._x",
        "_..",
        "_",
        "a_b",
        "a_b-2",
        "a_b-3",
    ]
    long_a, long_b = run_folder("y" * 300 + "a", set()), run_folder("y" * 300 + "b", set())
    assert long_a != long_b and long_a.startswith("y" * 100)


def test_a_run_folder_that_is_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    board, elsewhere = tmp_path / "board", tmp_path / "elsewhere"
    board.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, board / "p0")
    with pytest.raises(DestinationError, match="symbolic link"):
        log_tensorboard(str(board), [_run("p0")])
    assert list(elsewhere.iterdir()) == []


def test_profile_log_of_a_sweep_with_a_climbing_point_name_stays_inside(
    tracked_sweep: Path, tmp_path: Path
) -> None:
    pytest.importorskip("tensorboard")
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    record = json.loads((tracked_sweep / "sweep.json").read_text(encoding="utf-8"))
    record["points"] = {"../../climbed": next(iter(record["points"].values()))}
    record["recommended"] = {size: "../../climbed" for size in record["recommended"]}
    (sweep / "sweep.json").write_text(json.dumps(record), encoding="utf-8")
    board = tmp_path / "deep" / "er" / "tb"
    result = invoke(["profile", "log", str(sweep), "--tensorboard", str(board), "--json"])
    assert result.status == 0, result.stderr
    assert [p.name for p in board.iterdir()] == [".._.._climbed"]
    assert not (tmp_path / "deep" / "climbed").exists() and not (tmp_path / "climbed").exists()
