"""Staged run directories: the previous set survives until the new one is complete."""

from __future__ import annotations

from pathlib import Path

import pytest

from libreyolo.measure.artifacts import StagedRun


def test_commit_replaces_previous_set(tmp_path: Path) -> None:
    target = tmp_path / "infer"
    target.mkdir()
    (target / "profile.json").write_text("old")
    (target / "profile_trace.json").write_text("old trace")
    with StagedRun(target) as run:
        run.path("profile.json").write_text("new")
        assert (target / "profile.json").read_text() == "old"  # untouched until commit
        run.commit()
    assert (target / "profile.json").read_text() == "new"
    assert not (target / "profile_trace.json").exists()  # a set is replaced whole, never merged
    assert sorted(p.name for p in tmp_path.iterdir()) == ["infer"]


def test_failure_discards_staging_and_keeps_previous(tmp_path: Path) -> None:
    target = tmp_path / "run"
    target.mkdir()
    (target / "profile.json").write_text("old")
    with pytest.raises(KeyboardInterrupt), StagedRun(target) as run:
        run.path("profile.json").write_text("half")
        raise KeyboardInterrupt
    assert (target / "profile.json").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
