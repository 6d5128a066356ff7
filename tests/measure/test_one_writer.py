"""Each file of a set has one writer: every document is saved once, complete, into the staged
set, and the set is committed once; the --repeat aggregate changes with its profile.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from libreyolo.document import files
from libreyolo.measure import assemble
from tests.conftest import invoke
from tests.fixture_files import YOLO9T, fixture_file

CHECKPOINT = fixture_file(YOLO9T)
TINY = ["--device", "cpu", "--warmup", "0", "--runs", "2", "--imgsz", "64", "--no-trace"]


@pytest.fixture
def weights() -> str:
    return str(CHECKPOINT)


def test_repeat_trials_and_aggregate_are_written_once_into_the_staged_set(
    weights: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[Path] = []
    real_save = files.save

    def spy(profile: object, path: str | os.PathLike[str], **kwargs: bool) -> Path:
        written.append(Path(path))
        return real_save(profile, path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(files, "save", spy)
    monkeypatch.setattr(assemble, "save", spy)
    argv = ["profile", "infer", "--weights", weights, *TINY, "--project", str(tmp_path)]
    result = invoke([*argv, "--repeat", "2", "--json"])
    assert result.status == 0, result.stderr
    assert sorted(p.name for p in written) == ["infer_repeat.json", "profile.json"]
    assert all(p.parent.name.startswith(".infer.partial-") for p in written)  # staged, then swapped

    link = tmp_path / "infer_repeat.json"
    assert json.loads(result.stdout)["profile"] == str(link)
    assert os.readlink(link) == "infer/infer_repeat.json"
    profile = json.loads((tmp_path / "infer" / "profile.json").read_text())
    aggregate = json.loads(link.read_text())
    assert profile["run"]["config"]["window"]["repeat"] == 2
    assert profile["run"]["overrides"] == aggregate["run"]["overrides"]
    assert aggregate["trials"][-1]["metrics"] == profile["metrics"]  # the same last trial

    assert invoke([*argv, "--json"]).status == 0
    assert not os.path.lexists(link)  # no aggregate of trials that profile.json no longer holds
