"""Run directories: build a new set of files aside, swap it in whole, replace only our own.

On disk (for `run`, read `run` and `profile_repeat.json`):

    <project>/infer/                   the current set: profile.json, profile_trace.json,
                                       the marker .libreyolo-profile, and with --repeat the
                                       aggregate infer_repeat.json
    <project>/infer_repeat.json        a symlink to infer/infer_repeat.json (with --repeat)
    <project>/.infer.partial-<pid>-<hex>/   a running measurement's staging directory
    <project>/run/rank<i>/             on several ranks: each rank's profile.json and trace
                                       (the set's profile.json is the world's)

Commit: under an flock on `<project>` (swap.folder_lock: two racing runs commit in turn, the
last complete set stays, both exit 0), the staging directory and the current set trade places
in one rename(2) (swap.exchange), so a reader opening `infer/profile.json` always finds a
complete set, old or new; the old set, now under the staging name, is then deleted. Where the
exchange is unavailable (not Linux, NFS) two renames do it, and for those two system calls
`infer` is absent. The first commit into an empty project is one rename. The aggregate's link
names a path inside the set, so the same exchange swaps it: it never describes other trials
than the set's profile.json (a set without one removes the link).

Ownership: every staging directory gets the marker first, so every set holds it; a folder is
ours when it holds only our file names and the marker, or only profile.json and
profile_trace.json (a set of the previous version, which wrote no marker), or nothing at all
(nothing to lose). Anything else at the target (a user's folder, a file, a symlink) is never
replaced: DestinationError, exit 2. Checked when the run starts (before any model is built)
and again under the lock at commit.

Leftovers: each run holds an flock on its staging marker while it lives, so the next run
deletes staging directories whose marker no one holds (a run killed by SIGKILL or a power cut;
a reused pid cannot fake a held lock). Without a marker (the previous version's staging, or a
kill between mkdir and the marker) it deletes them only when their pid is not alive and they
hold only our files. SIGINT and SIGTERM unwind through `__exit__`, which deletes the staging.

Must not write profiles itself (assemble.py does, through `document.files.save`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path
from types import TracebackType

from libreyolo import __version__
from libreyolo.errors import BusyError, DestinationError, ProfileError
from libreyolo.measure.failures import destination_error
from libreyolo.measure.swap import exchange, folder_lock, try_lock
from libreyolo.pids import pid_alive

PROFILE_NAME = "profile.json"
TRACE_NAME = "profile_trace.json"
MARKER_NAME = ".libreyolo-profile"
REPEAT_NAMES = {"infer": "infer_repeat.json", "run": "profile_repeat.json"}  # by set folder
OUR_FILES = frozenset({PROFILE_NAME, TRACE_NAME, MARKER_NAME, *REPEAT_NAMES.values()})
LEGACY_FILES = frozenset({PROFILE_NAME, TRACE_NAME})
RANK_DIR = re.compile(r"rank[0-9]{1,4}")  # a rank's folder in a multi-process run's set
LOCK_TIMEOUT_S = 60.0  # a commit takes milliseconds; this long means a stuck holder
REFUSE_HINT = "move it away or choose another --project"


def set_dir(project: str | os.PathLike[str], mode: str) -> Path:
    """Where a `mode` ("infer" or "run") measurement's set lies."""
    return Path(project) / mode


class StagedRun:
    """A staging directory for one set; use as a context manager and call `commit()`.

    Leaving the block (after `commit()`, an exception, Ctrl-C, SIGTERM) deletes the staging
    directory, which after a commit holds the previous set. `aggregate`: the set will hold the
    --repeat aggregate, so the link to it beside the target must be free or ours.
    """

    def __init__(self, target: str | os.PathLike[str], *, aggregate: bool = False) -> None:
        self.target = Path(target)
        self.repeat_name = REPEAT_NAMES.get(self.target.name)
        self.committed = False
        self._marker_fd: int | None = None
        parent = self.target.parent
        # Folders this run creates, deepest first: a run that ends without a set removes them
        # again (when still empty), so a refused argument leaves no trace.
        self._created = [p for p in (parent, *parent.parents) if not os.path.lexists(p)]
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise destination_error(err, parent) from err
        check_replaceable(self.target)
        if aggregate:
            self._check_repeat_link()
        remove_leftovers(self.target)
        try:
            # Same parent, so the commit never crosses a filesystem.
            self.staging = _fresh_dir(self.target, "partial")
            self._marker_fd = _mark(self.staging)
        except BaseException as err:  # an interrupt here too: no half-made staging stays
            if hasattr(self, "staging"):
                shutil.rmtree(self.staging, ignore_errors=True)
            self._remove_created()
            if isinstance(err, OSError):
                raise destination_error(err, parent) from err
            raise

    def __enter__(self) -> StagedRun:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.discard()

    def path(self, name: str) -> Path:
        """Where a file of the new set is written now (inside the staging directory)."""
        return self.staging / name

    def final(self, name: str) -> Path:
        """Where that file lies after `commit()`."""
        return self.target / name

    @property
    def repeat_path(self) -> Path | None:
        """Where the --repeat aggregate is read after `commit()` (its link beside the set)."""
        return None if self.repeat_name is None else self.target.parent / self.repeat_name

    def commit(self) -> Path:
        """Put the finished set at the target in place of the previous one; returns the target."""
        with folder_lock(self.target.parent, LOCK_TIMEOUT_S) as held:
            if not held:
                raise BusyError(
                    f"another run is writing {self.target}",
                    hint="wait for it to finish or choose another --project",
                )
            check_replaceable(self.target)  # again: the folder may have changed meanwhile
            with_aggregate = self.repeat_name is not None and self.path(self.repeat_name).is_file()
            if with_aggregate:
                self._check_repeat_link()
            try:
                self._swap()
                self.committed = True
                self._update_repeat_link(with_aggregate)
            except OSError as err:
                raise destination_error(err, self.target) from err
        self.discard()
        return self.target

    def discard(self) -> None:
        """Delete the staging directory (the previous set, after a commit) and its lock, and
        without a commit the folders this run created."""
        shutil.rmtree(self.staging, ignore_errors=True)
        if self._marker_fd is not None:
            os.close(self._marker_fd)
            self._marker_fd = None
        if not self.committed:
            self._remove_created()

    def _remove_created(self) -> None:
        for folder in self._created:
            try:
                folder.rmdir()
            except OSError:  # not empty (another run's files) or already gone: leave the rest
                return
        self._created = []

    def _swap(self) -> None:
        if not os.path.lexists(self.target):
            os.rename(self.staging, self.target)
        elif not exchange(self.staging, self.target):
            aside = self.target.parent / _fresh_name(self.target, "partial")
            os.rename(self.target, aside)
            try:
                os.rename(self.staging, self.target)
            except OSError:
                os.rename(aside, self.target)
                raise
            self.staging = aside

    def _check_repeat_link(self) -> None:
        link = self.repeat_path
        if link is not None and _owner(link, self.target.name) == "other":
            raise DestinationError(
                f"refusing to replace {link}: it is not a profile made by libreyolo",
                hint=REFUSE_HINT,
            )

    def _update_repeat_link(self, with_aggregate: bool) -> None:
        link = self.repeat_path
        if link is None:
            return
        inside = f"{self.target.name}/{link.name}"
        if with_aggregate:
            if not (link.is_symlink() and os.readlink(link) == inside):
                _put_link(link, inside)
        elif _owner(link, self.target.name) == "ours":
            link.unlink()


class BorrowedRun(StagedRun):
    """Another process's staging directory, written into by a `--repeat` trial's own process:
    the files land in the set its owner commits; this handle never commits or deletes it."""

    def __init__(self, staging: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        # Nothing is made or checked: the owner did both before lending it.
        self.target, self.staging = Path(target), Path(staging)
        self.repeat_name = REPEAT_NAMES.get(self.target.name)
        self.committed = False
        self._marker_fd = None
        self._created = []

    def commit(self) -> Path:
        raise RuntimeError("a borrowed staging directory is committed by its owner")

    def discard(self) -> None:
        """Nothing: the owner deletes its staging directory."""


def is_profile_set(path: Path) -> bool:
    """A real folder holding only our files: marked, or the previous version's two, or none."""
    if path.is_symlink() or not path.is_dir():
        return False
    try:
        entries = list(os.scandir(path))
    except OSError:
        return False
    names = {entry.name for entry in entries if entry.is_file(follow_symlinks=False)}
    folders = [entry for entry in entries if entry.name not in names]
    if folders and MARKER_NAME not in names:
        return False
    if not all(_is_rank_folder(entry) for entry in folders):
        return False
    return names <= (OUR_FILES if MARKER_NAME in names else LEGACY_FILES)


def _is_rank_folder(entry: os.DirEntry[str]) -> bool:
    """A multi-process run's `rank<i>/`: a real folder holding at most a profile and its trace."""
    if not RANK_DIR.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
        return False
    try:
        inside = list(os.scandir(entry.path))
    except OSError:
        return False
    return all(item.is_file(follow_symlinks=False) and item.name in LEGACY_FILES for item in inside)


def check_replaceable(target: Path) -> None:
    """DestinationError unless `target` is absent or a profile set this tool made."""
    if os.path.lexists(target) and not is_profile_set(target):
        raise DestinationError(
            f"refusing to replace {target}: it is not a profile folder made by libreyolo",
            hint=REFUSE_HINT,
        )


def _owner(link: Path, set_name: str) -> str:
    """ "none", "ours" (our link into the set, or the previous version's aggregate file: a
    libreyolo profile) or "other" for the path of the --repeat aggregate."""
    if not os.path.lexists(link):
        return "none"
    if link.is_symlink():
        return "ours" if os.readlink(link) == f"{set_name}/{link.name}" else "other"
    if not link.is_file():
        return "other"
    from libreyolo.document.files import read_raw

    try:
        schema = read_raw(str(link)).get("schema")
    except ProfileError:
        return "other"
    return "ours" if isinstance(schema, str) and schema.startswith("libreyolo.") else "other"


def _put_link(link: Path, inside: str) -> None:
    """Point `link` at `inside` (relative) in one rename over whatever is there."""
    temp = link.parent / _fresh_name(link, "link")
    try:
        os.symlink(inside, temp)
    except (OSError, NotImplementedError):  # Windows without the privilege: a copy instead
        shutil.copyfile(link.parent / inside, temp)
    try:
        os.replace(temp, link)
    except OSError:
        temp.unlink(missing_ok=True)
        raise


def remove_leftovers(target: Path) -> None:
    """Delete staging directories (and half-made links) beside `target` whose run is gone."""
    names = "|".join(re.escape(n) for n in (target.name, REPEAT_NAMES.get(target.name)) if n)
    pattern = re.compile(rf"\.(?:{names})\.(partial|old|link)-(\d+)-[0-9a-f]{{8}}")
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None:
            continue
        tag, pid, path = match[1], int(match[2]), Path(entry.path)
        try:
            if tag == "link":
                if path.is_symlink() and not pid_alive(pid):
                    path.unlink(missing_ok=True)
            elif _abandoned(path, pid, tag, target.name):
                shutil.rmtree(path, ignore_errors=True)
        except OSError:  # unreadable or just removed by another run: not ours to judge now
            continue


def _abandoned(path: Path, pid: int, tag: str, set_name: str) -> bool:
    if path.is_symlink() or not path.is_dir():
        return False
    marker = path / MARKER_NAME
    if marker.is_file():
        return not _held(marker, pid)
    if pid_alive(pid):
        return False
    if tag == "old":  # the previous version moved the old set into `.<name>.old-*/<name>`
        return [p.name for p in path.iterdir()] == [set_name] and is_profile_set(path / set_name)
    return is_profile_set(path)


def _held(marker: Path, pid: int) -> bool:
    """Whether a live run holds the flock on a staging marker (unreadable counts as held;
    without flock, whether its pid is alive)."""
    try:
        fd = os.open(marker, os.O_RDWR)
    except OSError:
        return True
    try:
        taken = try_lock(fd)
    finally:
        os.close(fd)
    return pid_alive(pid) if taken is None else not taken


def _mark(directory: Path) -> int:
    """Write the marker into a new staging directory; returns its descriptor, which holds the
    flock that tells other runs this directory is alive. Locked before it is renamed into
    place, so no other run ever sees the marker unlocked while this one lives."""
    draft = directory / f"{MARKER_NAME}.new"
    fd = os.open(draft, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try_lock(fd)
        os.write(fd, json.dumps({"tool": "libreyolo", "version": __version__}).encode() + b"\n")
        os.rename(draft, directory / MARKER_NAME)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _fresh_name(target: Path, tag: str) -> str:
    return f".{target.name}.{tag}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _fresh_dir(target: Path, tag: str) -> Path:
    """A new hidden sibling of `target`; os.mkdir honours the umask (mkdtemp would force 0700)."""
    while True:
        path = target.parent / _fresh_name(target, tag)
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path


def utc_now() -> str:
    """The `created` stamp: UTC, ISO 8601, whole seconds."""
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
