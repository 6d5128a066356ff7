"""`--rank N` reads one rank of a multi-process run's world profile: the right file, and a clear
refusal (exit 2) for a rank the world has not, a one-process profile, or a world profile whose
record points anywhere but its own rank folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from libreyolo.analysis.build import finalize
from libreyolo.analysis.world_profile import world_profile
from libreyolo.document.files import save
from libreyolo.document.model import Profile, RunInfo, Samples, StepSample, Tool
from tests.conftest import invoke


def _rank(rank: int) -> Profile:
    steps = [StepSample(index=i, synced=False, wall_ms=400.0 + rank) for i in range(3)]
    return finalize(
        Profile(
            kind="train",
            created=None,
            tool=Tool(version="2.0.0"),
            run=RunInfo(mode="training", batch=2, device="cpu"),  # type: ignore[arg-type]
            samples=Samples(steps=steps),
        )
    )


def _world(tmp_path: Path) -> Path:
    ranks = [_rank(0), _rank(1)]
    folder = tmp_path / "run"
    for rank, profile in enumerate(ranks):
        (folder / f"rank{rank}").mkdir(parents=True)
        save(profile, folder / f"rank{rank}" / "profile.json")
    world = world_profile(ranks, backend="gloo", launcher="spawn", global_batch=4)
    save(world, folder / "profile.json")
    return folder / "profile.json"


def test_rank_reads_that_ranks_profile(tmp_path: Path) -> None:
    path = _world(tmp_path)
    world = invoke(["profile", "phases", str(path), "--json"])
    ranked = invoke(["profile", "phases", str(path), "--rank", "1", "--json"])
    assert world.status == 0 and ranked.status == 0, ranked.stderr
    assert '"trace": "' + str(path.parent / "rank1" / "profile.json") + '"' in ranked.stdout
    assert invoke(["profile", "ops", str(path), "--rank", "0"]).status == 0
    assert invoke(["profile", "kernels", str(path), "--rank", "1"]).status == 0


@pytest.mark.parametrize("reader", ["kernels", "ops", "phases"])
def test_a_rank_the_world_has_not_is_refused(reader: str, tmp_path: Path) -> None:
    path = _world(tmp_path)
    result = invoke(["profile", reader, str(path), "--rank", "2"])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.strip() == f"--rank 2: {path} has ranks 0 to 1 (give a rank below 2)"


def test_a_one_process_profile_has_no_rank(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    save(_rank(0), path)
    result = invoke(["profile", "ops", str(path), "--rank", "0"])
    assert result.status == 2 and result.stdout == ""
    assert "is not a multi-process run's profile: --rank has no rank to read" in result.stderr


@pytest.mark.parametrize("pointed", ["../../etc/passwd", "/etc/passwd", "rank0/profile.json"])
def test_a_record_pointing_outside_its_rank_folder_is_refused(pointed: str, tmp_path: Path) -> None:
    path = _world(tmp_path)
    text = path.read_text().replace('"rank1/profile.json"', f'"{pointed}"')
    path.write_text(text)
    result = invoke(["profile", "ops", str(path), "--rank", "1"])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.startswith(f"{path}: rank 1's profile cannot be found from it ('")
