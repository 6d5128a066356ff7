"""The commit of a run's set: it replaces only our own folders, swaps in one rename, cleans up
after dead runs and survives a race. StagedRun directly, no measurement."""

from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import Path

import pytest

from libreyolo.errors import BusyError, DestinationError, DiskFullError, ExitStatus
from libreyolo.measure import artifacts, swap
from libreyolo.measure.artifacts import MARKER_NAME, StagedRun

REFUSAL = "it is not a profile folder made by libreyolo"


def _dead_pid() -> int:
    """A pid no process can have: one above the kernel's limit."""
    try:
        return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    except OSError:
        return 2**22 + 1


def _commit(target: Path, text: str, **kwargs: bool) -> None:
    with StagedRun(target, **kwargs) as run:
        run.path("profile.json").write_text(text)
        run.path("profile_trace.json").write_text(text)
        if kwargs.get("aggregate"):
            run.path("infer_repeat.json").write_text(text)
        run.commit()


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_commit_refuses_a_folder_it_did_not_make(tmp_path: Path) -> None:
    target = tmp_path / "infer"
    target.mkdir()
    (target / "thesis.tex").write_text("two years of work")
    with pytest.raises(DestinationError) as caught:
        _commit(target, "new")
    assert caught.value.message == f"refusing to replace {target}: {REFUSAL}"
    assert caught.value.hint == "move it away or choose another --project"
    assert caught.value.status == ExitStatus.USAGE
    assert (target / "thesis.tex").read_text() == "two years of work"
    assert _names(tmp_path) == ["infer"]  # no staging directory was made


@pytest.mark.parametrize("shape", ["file", "symlink", "subfolder", "our name as a folder"])
def test_commit_refuses_anything_but_a_set_of_ours(tmp_path: Path, shape: str) -> None:
    target = tmp_path / "infer"
    if shape == "file":
        target.write_text("mine")
    elif shape == "symlink":
        (tmp_path / "elsewhere").mkdir()
        target.symlink_to("elsewhere")
    else:
        (target / ("data" if shape == "subfolder" else "profile.json")).mkdir(parents=True)
    with pytest.raises(DestinationError, match=REFUSAL):
        _commit(target, "new")
    assert os.path.lexists(target)


def test_commit_replaces_a_set_of_the_previous_version_and_an_empty_folder(
    tmp_path: Path,
) -> None:
    legacy = tmp_path / "a" / "infer"
    legacy.mkdir(parents=True)
    (legacy / "profile.json").write_text("old")
    (legacy / "profile_trace.json").write_text("old")
    empty = tmp_path / "b" / "run"
    empty.mkdir(parents=True)
    for target in (legacy, empty):
        _commit(target, "new")
        assert (target / "profile.json").read_text() == "new"


def test_every_set_carries_the_marker_and_replaces_its_predecessor(tmp_path: Path) -> None:
    target = tmp_path / "infer"
    _commit(target, "first")
    marker = json.loads((target / MARKER_NAME).read_text())
    assert marker["tool"] == "libreyolo" and marker["version"]
    _commit(target, "second")
    assert (target / "profile.json").read_text() == "second"
    assert _names(target) == [MARKER_NAME, "profile.json", "profile_trace.json"]
    assert _names(tmp_path) == ["infer"]


@pytest.mark.skipif(swap._renameat2() is None, reason="no renameat2 on this system")
def test_the_target_is_never_absent_during_a_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "infer"
    _commit(target, "old")
    seen: list[bool] = []

    def checked(real):  # type: ignore[no-untyped-def]
        def call(*args: object, **kwargs: object) -> None:
            real(*args, **kwargs)
            seen.append((target / "profile.json").is_file())

        return call

    monkeypatch.setattr(os, "rename", checked(os.rename))
    monkeypatch.setattr(os, "replace", checked(os.replace))
    _commit(target, "new")
    assert False not in seen
    assert (target / "profile.json").read_text() == "new"


def test_without_the_exchange_two_renames_still_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(artifacts, "exchange", lambda a, b: False)
    target = tmp_path / "run"
    _commit(target, "old")
    _commit(target, "new")
    assert (target / "profile.json").read_text() == "new"
    assert _names(tmp_path) == ["run"]


def test_leftovers_of_dead_runs_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    dead, me = _dead_pid(), os.getpid()

    def leftover(name: str, *files: str) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        for file in files:
            (folder / file).parent.mkdir(parents=True, exist_ok=True)
            (folder / file).write_text("x")
        return folder

    killed = leftover(f".infer.partial-{dead}-0123abcd", MARKER_NAME, ".profile.json.tmp")
    reused_pid = leftover(f".infer.partial-{me}-0123abce", MARKER_NAME)  # no one holds it
    previous_version = leftover(f".infer.partial-{dead}-0123abcf", "profile.json")
    previous_aside = leftover(f".infer.old-{dead}-0123abd0", "infer/profile.json")
    live = leftover(f".infer.partial-{me}-0123abd1", MARKER_NAME)
    foreign = leftover(f".infer.partial-{dead}-0123abd2", "notes.txt")
    unmarked_live = leftover(f".infer.partial-{me}-0123abd3", "profile.json")
    holder = os.open(live / MARKER_NAME, os.O_RDWR)
    try:
        assert swap.try_lock(holder)
        with StagedRun(tmp_path / "infer"):
            remaining = set(_names(tmp_path))
    finally:
        os.close(holder)
    for gone in (killed, reused_pid, previous_version, previous_aside):
        assert gone.name not in remaining
    for kept in (live, foreign, unmarked_live):
        assert kept.name in remaining


def test_an_interrupt_leaves_the_previous_set_and_no_staging(tmp_path: Path) -> None:
    target = tmp_path / "infer"
    _commit(target, "old")
    with pytest.raises(KeyboardInterrupt), StagedRun(target) as run:
        run.path("profile.json").write_text("half")
        raise KeyboardInterrupt
    assert (target / "profile.json").read_text() == "old"
    assert _names(tmp_path) == ["infer"]


def test_racing_commits_leave_one_complete_set_and_nothing_else(tmp_path: Path) -> None:
    target = tmp_path / "infer"
    errors: list[BaseException] = []
    for round_ in range(10):
        barrier = threading.Barrier(2)

        def one(name: str, round_: int = round_, barrier: threading.Barrier = barrier) -> None:
            try:
                with StagedRun(target) as run:
                    run.path("profile.json").write_text(f"{name}{round_}")
                    run.path("profile_trace.json").write_text(f"{name}{round_}")
                    barrier.wait(timeout=30)
                    run.commit()
            except BaseException as err:  # reported below, in the test's thread
                errors.append(err)

        threads = [threading.Thread(target=one, args=(name,)) for name in "ab"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        profile = (target / "profile.json").read_text()
        assert profile in (f"a{round_}", f"b{round_}")
        assert (target / "profile_trace.json").read_text() == profile
        assert _names(tmp_path) == ["infer"]


def test_a_held_commit_lock_makes_the_other_run_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(artifacts, "LOCK_TIMEOUT_S", 0.05)
    target = tmp_path / "infer"
    _commit(target, "old")
    with swap.folder_lock(tmp_path, 1.0) as held, pytest.raises(BusyError) as caught:
        assert held
        _commit(target, "new")
    assert caught.value.message == f"another run is writing {target}"
    assert caught.value.status == ExitStatus.USAGE
    assert (target / "profile.json").read_text() == "old"
    assert _names(tmp_path) == ["infer"]


def test_the_repeat_aggregate_is_reached_through_a_link_into_the_set(tmp_path: Path) -> None:
    target = tmp_path / "infer"
    link = tmp_path / "infer_repeat.json"
    link.write_text(json.dumps({"schema": "libreyolo.profile.analysis/v1"}))  # 1.6.0's file
    _commit(target, "trials", aggregate=True)
    assert os.readlink(link) == "infer/infer_repeat.json" and link.read_text() == "trials"
    _commit(target, "again", aggregate=True)
    assert link.read_text() == "again"  # swapped with the set, in the same rename
    _commit(target, "single")
    assert not os.path.lexists(link)  # never an aggregate of other trials than profile.json
    assert _names(tmp_path) == ["infer"]


def test_a_foreign_file_where_the_aggregate_goes_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "infer_repeat.json"
    link.write_text("my notes")
    with pytest.raises(DestinationError) as caught:
        _commit(tmp_path / "infer", "trials", aggregate=True)
    assert caught.value.message == (
        f"refusing to replace {link}: it is not a profile made by libreyolo"
    )
    assert link.read_text() == "my notes"
    _commit(tmp_path / "infer", "single")  # a run without an aggregate leaves it alone
    assert link.read_text() == "my notes"


@pytest.mark.parametrize(
    ("project", "reason"),
    [
        ("file", "it is a file, not a folder"),
        ("file/sub", "a part of it is a file, not a folder"),
        ("x" * 300, "a name in it is too long"),
    ],
)
def test_an_unusable_project_is_the_users_error(tmp_path: Path, project: str, reason: str) -> None:
    (tmp_path / "file").write_text("a file")
    with pytest.raises(DestinationError) as caught:
        StagedRun(tmp_path / project / "infer")
    assert caught.value.message == f"cannot write {tmp_path / project}: {reason}"
    assert caught.value.hint == "choose another --project"


@pytest.mark.parametrize(
    ("code", "reason"),
    [(errno.EACCES, "permission denied"), (errno.EROFS, "the file system is read-only")],
)
def test_a_project_we_cannot_write_is_the_users_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, reason: str
) -> None:
    # Tests run as root, where a chmod does not stop writes: fail the staging mkdir instead.
    def refuse(target: Path, tag: str) -> Path:
        raise OSError(code, os.strerror(code), str(target.parent))

    monkeypatch.setattr(artifacts, "_fresh_dir", refuse)
    with pytest.raises(DestinationError) as caught:
        StagedRun(tmp_path / "infer")
    assert caught.value.message == f"cannot write {tmp_path}: {reason}"
    assert caught.value.status == ExitStatus.USAGE


def test_a_full_disk_at_the_start_is_a_failed_measurement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(target: Path, tag: str) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(artifacts, "_fresh_dir", full)
    with pytest.raises(DiskFullError) as caught:
        StagedRun(tmp_path / "infer")
    assert caught.value.message == f"disk full writing {tmp_path}"
    assert caught.value.status == ExitStatus.NO_PROFILE


def test_two_processes_committing_in_a_loop_end_cleanly(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from libreyolo.measure.artifacts import StagedRun\n"
        "for i in range(20):\n"
        "    with StagedRun(sys.argv[1]) as run:\n"
        "        for name in ('profile.json', 'profile_trace.json'):\n"
        "            run.path(name).write_text(f'{sys.argv[2]}{i}')\n"
        "        run.commit()\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    target = str(tmp_path / "infer")
    children = [
        subprocess.Popen([sys.executable, "-c", script, target, name], env=env, cwd=root)
        for name in "ab"
    ]
    assert [child.wait(timeout=60) for child in children] == [0, 0]
    profile = (tmp_path / "infer" / "profile.json").read_text()
    assert profile in ("a19", "b19")
    assert (tmp_path / "infer" / "profile_trace.json").read_text() == profile
    assert _names(tmp_path) == ["infer"]
