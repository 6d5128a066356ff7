"""A sweep never reads or writes through a point folder that is a link out of its folder: such
a folder (planted, or left by a copy) is refused before any point, with Hydra's own files not
written there either; links that stay inside, and file links such as the `--repeat` aggregate,
are the sweep's own business."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from libreyolo.errors import UsageError
from libreyolo.sweep.owned import linked_out, refuse_foreign
from tests.sweep.helpers import tune_argv


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the sweep holding a finished point's files."""
    folder = tmp_path / "elsewhere" / "b1_s64_amp1"
    folder.mkdir(parents=True)
    (folder / "status.json").write_text('{"status": "ok"}')
    return folder


def test_a_point_folder_linked_out_is_refused_naming_it(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "sweep"
    (root / "b4").mkdir(parents=True)
    (root / "b4" / "nested").symlink_to(outside, target_is_directory=True)
    assert linked_out(root) == root / "b4" / "nested"
    with pytest.raises(UsageError) as refused:
        refuse_foreign(root)
    assert refused.value.message == (
        f"refusing to sweep through {root / 'b4' / 'nested'}: a symbolic link to {outside}, "
        "outside the sweep folder"
    )


def test_links_that_stay_inside_and_file_links_are_the_sweeps_own(tmp_path: Path) -> None:
    root = tmp_path / "sweep"
    (root / "real" / "infer").mkdir(parents=True)
    (root / "real" / "infer" / "profile.json").write_text("{}")
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    (root / "real" / "profile_repeat.json").symlink_to(root / "real" / "infer" / "profile.json")
    assert linked_out(root) is None
    refuse_foreign(root)


@pytest.mark.slow
def test_a_search_into_a_folder_with_a_link_out_writes_nothing_there(
    tmp_path: Path, outside: Path
) -> None:
    root = tmp_path / "sweep"
    root.mkdir()
    (root / "b1_s64_amp1").symlink_to(outside, target_is_directory=True)
    before = _snapshot(outside.parent)
    done = subprocess.run(
        tune_argv(root, "window.repeat=3", "tune.batch_max=2", "tune.batch_step=1"),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        f"refusing to sweep through {root / 'b1_s64_amp1'}: a symbolic link to {outside}"
    )
    assert _snapshot(outside.parent) == before  # not even Hydra's .hydra files
