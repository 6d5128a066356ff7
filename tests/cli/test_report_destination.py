"""`libreyolo profile report -o`: the page goes to a regular file or a new path only, never a
device, FIFO, socket, symbolic link or folder, and never over one of the page's inputs. Each
refusal exits 2 with one line, writes nothing and leaves what is there as it was."""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from tests.conftest import invoke
from tests.sweep.test_report import make_point

HINT = "choose another path with -o FILE"


@pytest.fixture
def profile(reference_v1: Path, tmp_path: Path) -> Path:
    target = tmp_path / "run" / "profile.json"
    target.parent.mkdir()
    target.write_bytes((reference_v1 / "infer_b1.profile.json").read_bytes())
    return target


@pytest.fixture
def other(reference_v1: Path, tmp_path: Path) -> Path:
    target = tmp_path / "other" / "profile.json"
    target.parent.mkdir()
    target.write_bytes((reference_v1 / "infer_b4.profile.json").read_bytes())
    return target


def _refused(argv: list[str], destination: Path | str, reason: str) -> None:
    """The report exits 2 with exactly one line naming `destination` and `reason`."""
    result = invoke(["profile", "report", *argv])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == f"cannot write the report to {destination}: {reason} ({HINT})\n"


def _no_temp_files(folder: Path) -> None:
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []


@pytest.fixture
def char_device(tmp_path: Path) -> Path:
    """A character device to aim at: as root our own node with /dev/null's numbers, so no test
    can ever replace the machine's /dev/null; otherwise /dev/null, which a non-root process
    cannot replace."""
    if os.geteuid() != 0:
        return Path("/dev/null")
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return node


def test_a_character_device_is_refused_and_stays_a_device(profile: Path, char_device: Path) -> None:
    _refused([str(profile), "-o", str(char_device)], char_device, "it is a character device")
    assert stat.S_ISCHR(os.lstat(char_device).st_mode)
    assert os.lstat(char_device).st_rdev == os.makedev(1, 3)
    _no_temp_files(char_device.parent)


def test_a_fifo_is_refused_and_stays_a_fifo(profile: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    _refused([str(profile), "-o", str(fifo)], fifo, "it is a FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    _no_temp_files(tmp_path)


def test_a_socket_is_refused_and_stays_a_socket(profile: Path, tmp_path: Path) -> None:
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        _refused([str(profile), "-o", str(path)], path, "it is a socket")
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_a_symlink_to_a_regular_file_is_refused_and_kept(profile: Path, tmp_path: Path) -> None:
    kept = tmp_path / "notes.html"
    kept.write_text("my notes")
    link = tmp_path / "link.html"
    link.symlink_to(kept)
    _refused([str(profile), "-o", str(link)], link, "it is a symbolic link")
    assert link.is_symlink() and os.readlink(link) == str(kept)
    assert kept.read_text() == "my notes"


def test_a_dangling_symlink_is_refused_and_nothing_is_created(
    profile: Path, tmp_path: Path
) -> None:
    link = tmp_path / "dangling.html"
    link.symlink_to(tmp_path / "nowhere.html")
    _refused([str(profile), "-o", str(link)], link, "it is a symbolic link")
    assert link.is_symlink() and not (tmp_path / "nowhere.html").exists()


def test_a_folder_is_refused(profile: Path, tmp_path: Path) -> None:
    folder = tmp_path / "pages"
    folder.mkdir()
    _refused([str(profile), "-o", str(folder)], folder, "it is a folder")
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize(("tail", "shown"), [("/", "/"), ("/.", ".")])
def test_a_path_naming_a_folder_that_does_not_exist_is_refused(
    profile: Path, tmp_path: Path, tail: str, shown: str
) -> None:
    named = f"{tmp_path / 'newdir'}{tail}"
    _refused([str(profile), "-o", named], named, f"a path ending in {shown} names a folder")
    assert not (tmp_path / "newdir").exists()
    _no_temp_files(tmp_path)


def test_an_existing_folder_with_a_trailing_slash_is_refused(profile: Path, tmp_path: Path) -> None:
    named = f"{tmp_path}/"
    _refused([str(profile), "-o", named], named, "a path ending in / names a folder")


def test_the_input_itself_is_refused_and_kept(profile: Path) -> None:
    before = profile.read_bytes()
    _refused([str(profile), "-o", str(profile)], profile, "it is one of the report's inputs")
    assert profile.read_bytes() == before


def test_the_input_through_a_linked_folder_is_refused(profile: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(profile.parent)
    before = profile.read_bytes()
    other_name = alias / profile.name
    _refused([str(profile), "-o", str(other_name)], other_name, "it is one of the report's inputs")
    assert profile.read_bytes() == before


@pytest.mark.parametrize("which", [0, 1])
def test_either_input_of_a_comparison_is_refused_and_kept(
    profile: Path, other: Path, which: int
) -> None:
    inputs = [profile, other]
    before = [p.read_bytes() for p in inputs]
    argv = [str(profile), str(other), "-o", str(inputs[which])]
    _refused(argv, inputs[which], "it is one of the report's inputs")
    assert [p.read_bytes() for p in inputs] == before


@pytest.fixture
def sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished sweep folder of two points: plan, record (`sweep.json`) and point files."""
    from libreyolo.sweep.report import write_report

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # no chart: not what is tested
    root = tmp_path / "sweep"
    names = [make_point(root, 1, 64, 50.0), make_point(root, 2, 64, 80.0)]
    plan = {"schema": "libreyolo.sweep-plan/v1", "points": {name: [] for name in names}}
    (root / "sweep_plan.json").write_text(json.dumps(plan), encoding="utf-8")
    write_report(root)
    (root / "sweep.html").unlink()  # the page `report` is to write
    monkeypatch.undo()
    return root


@pytest.mark.parametrize(
    "relative",
    [
        "sweep.json",
        "sweep_plan.json",
        "b1_s64_amp1/point.json",
        "b2_s64_amp1/status.json",
        "b2_s64_amp1/infer/profile.json",  # a profile the page reads
    ],
)
def test_a_file_of_the_sweep_is_refused_and_kept(sweep: Path, relative: str) -> None:
    target = sweep / relative
    before = target.read_bytes()
    _refused([str(sweep), "-o", str(target)], target, "it is one of the report's inputs")
    assert target.read_bytes() == before
    assert not (sweep / "sweep.html").exists()


def test_a_sweep_page_goes_to_a_new_path_beside_the_record(sweep: Path) -> None:
    target = sweep / "pages" / "all.html"
    result = invoke(["profile", "report", str(sweep), "-o", str(target)])
    assert result.status == 0 and result.stdout == f"{target}\n", result.stderr
    assert target.read_bytes().startswith(b"<!DOCTYPE html>")


def test_the_default_destination_obeys_the_same_rule(profile: Path) -> None:
    fifo = profile.parent / "report.html"
    os.mkfifo(fifo)
    _refused([str(profile)], fifo, "it is a FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_refusal_under_json_is_one_error_object(profile: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = invoke(["profile", "report", str(profile), "-o", str(fifo), "--json"])
    assert result.status == 2 and result.stdout == ""
    assert json.loads(result.stderr) == {
        "error": {
            "code": "usage",
            "message": f"cannot write the report to {fifo}: it is a FIFO",
            "hint": HINT,
        }
    }
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_regular_file_is_replaced_and_a_new_path_is_created(
    profile: Path, tmp_path: Path
) -> None:
    existing = tmp_path / "old.html"
    existing.write_text("old")
    assert invoke(["profile", "report", str(profile), "-o", str(existing)]).status == 0
    assert existing.read_bytes().startswith(b"<!DOCTYPE html>")
    created = tmp_path / "a" / "b" / "new.html"
    result = invoke(["profile", "report", str(profile), "-o", str(created)])
    assert result.status == 0 and result.stdout == f"{created}\n"
    assert stat.S_ISREG(os.lstat(created).st_mode)


def test_an_empty_path_is_refused(
    profile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(["profile", "report", str(profile), "-o", ""])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == f"cannot write the report to an empty path ({HINT})\n"
    assert list(tmp_path.iterdir()) == [profile.parent]
