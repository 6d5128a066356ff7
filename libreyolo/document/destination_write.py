"""Writing to a destination the user named, so that nothing swapped in between the check and
the write is written through.

Role: `open_destination` runs `destination.check_destination` (a regular file or a new path,
never a link, device, folder or input), then opens the deepest existing folder above the path
and notes what the last part is: absent, or a regular file by device and inode.
`Destination.write` works relative to that open folder only. It creates the missing folders one
at a time, each opened without following a link, writes a temporary file opened
`O_CREAT|O_EXCL|O_NOFOLLOW` beside the destination, checks that the folder path still reaches
the folder opened and that the last part is still what was checked, and renames the temporary
file over it.

The rule: the folder may be reached through symbolic links (a linked home or project folder is
ordinary use); the destination's last part must not be a link, nor any folder this writer
creates, and a folder or file replaced while the page was built is refused, not followed. Each
refusal is a `UsageError` (exit 2) with the temporary file removed. A racer that swaps a link in
during the microseconds between the last check and the rename gets its link replaced by the
page; a rename never writes through a link.

Must not: follow a link at the destination or at a folder it creates, leave a temporary file,
or import beyond the standard library.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from libreyolo.document.destination import check_destination
from libreyolo.errors import UsageError

# O_PATH: a folder the user may write but not list (mode 0333) still opens
_FOLDER_FLAGS = os.O_DIRECTORY | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP_NAME_CHARS = 40  # of the destination's name in the temporary one: a 255-byte name works
_FOLDER_PARTS = ("", ".", "..")
_NOT_A_FOLDER = (errno.ELOOP, errno.ENOTDIR)  # an O_NOFOLLOW folder open that met a link

FileId = tuple[int, int]  # (st_dev, st_ino)
OTHER: FileId = (-1, -1)  # a link, folder or device where a regular file or nothing was


def _file_id(info: os.stat_result) -> FileId:
    return info.st_dev, info.st_ino


def _last_part_id(folder_fd: int, name: str) -> FileId | None:
    """The regular file `name` in the open folder; None when there is none, OTHER for
    anything else, never followed."""
    try:
        info = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return _file_id(info) if stat.S_ISREG(info.st_mode) else OTHER


def _remove(name: str, folder_fd: int) -> None:
    with contextlib.suppress(OSError):  # already failing: the first error is the one to tell
        os.unlink(name, dir_fd=folder_fd)


@dataclass
class Destination:
    """A checked destination: `folder_fd` is the deepest folder above `path` that existed when
    it was checked (`folder` spells it, `folder_id` is what it was), `missing` the folders to
    create under it and `file_id` the regular file the last part was (None: none)."""

    path: Path
    what: str
    hint: str
    folder: Path
    folder_fd: int
    folder_id: FileId
    missing: tuple[str, ...]
    file_id: FileId | None

    def __enter__(self) -> Destination:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        os.close(self.folder_fd)

    def refuse(self, reason: str) -> UsageError:
        return UsageError(f"cannot write {self.what} to {self.path}: {reason}", hint=self.hint)

    def write(self, payload: bytes) -> None:
        """Put `payload` at the destination whole, or raise UsageError with nothing there."""
        try:
            parent = self._make_folders()
        except OSError as err:
            if err.errno in _NOT_A_FOLDER:
                reason = "a folder on its path was replaced while the page was built"
                raise self.refuse(reason) from None
            raise self.refuse(err.strerror or str(err)) from None
        try:
            temp = self._temp_file(parent, payload)
            try:
                self._check_unchanged(parent)
                os.replace(temp, self.path.name, src_dir_fd=parent, dst_dir_fd=parent)
            except BaseException:
                _remove(temp, parent)
                raise
        except OSError as err:
            raise self.refuse(err.strerror or str(err)) from None
        finally:
            if parent != self.folder_fd:
                os.close(parent)

    def _make_folders(self) -> int:
        """The open folder that is to hold the file: the checked one, or the last of the
        missing folders, each created and opened without following a link."""
        fd = self.folder_fd
        for name in self.missing:
            with contextlib.suppress(FileExistsError):  # made meanwhile: the open judges it
                os.mkdir(name, 0o777, dir_fd=fd)
            try:
                child = os.open(name, _FOLDER_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            finally:
                if fd != self.folder_fd:
                    os.close(fd)
            fd = child
        return fd

    def _temp_file(self, parent: int, payload: bytes) -> str:
        """A new file beside the destination holding `payload`, flushed to disk; its name."""
        temp = f".{self.path.name[:_TEMP_NAME_CHARS]}.{secrets.token_hex(8)}.tmp"
        handle = os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=parent)  # the umask applies
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(payload)
                out.flush()
                os.fsync(out.fileno())
        except BaseException:
            _remove(temp, parent)
            raise
        return temp

    def _check_unchanged(self, parent: int) -> None:
        """UsageError when the folder path no longer reaches the folder opened, or the last
        part is not what was checked (a link, another file, or a file where none was)."""
        try:
            folder_now: FileId | None = _file_id(os.stat(self.folder))
        except OSError:
            folder_now = None
        if folder_now != self.folder_id:
            raise self.refuse(f"{self.folder} was replaced while the page was built")
        if _last_part_id(parent, self.path.name) != self.file_id:
            raise self.refuse("it was replaced while the page was built")


def _open_folder(path: Path, refuse: str, hint: str) -> tuple[Path, int, tuple[str, ...]]:
    """The deepest existing folder above `path` (links followed), opened, and the names of
    the folders below it that `path` needs."""
    folder: Path = path.parent
    missing: tuple[str, ...] = ()
    while True:
        try:
            return folder, os.open(folder, _FOLDER_FLAGS), missing
        except FileNotFoundError:
            if os.path.lexists(folder):  # following a link to nothing would create its target
                reason = f"{folder} is a symbolic link to nothing"
                raise UsageError(f"{refuse}: {reason}", hint=hint) from None
            if folder.name in _FOLDER_PARTS or folder == folder.parent:
                raise UsageError(f"{refuse}: {folder} does not exist", hint=hint) from None
            folder, missing = folder.parent, (folder.name, *missing)
        except OSError as err:
            raise UsageError(f"{refuse}: {err.strerror or err}", hint=hint) from None


def open_destination(
    path: str, inputs: Iterable[str | os.PathLike[str]] = (), *, what: str, hint: str
) -> Destination:
    """`path` checked (`check_destination`) and its folder opened; use it as a context
    manager, which closes the folder. UsageError (exit 2) before anything is written."""
    target = check_destination(path, inputs, what=what, hint=hint)
    folder, fd, missing = _open_folder(target, f"cannot write {what} to {path}", hint)
    try:
        folder_id = _file_id(os.fstat(fd))
        file_id = None if missing else _last_part_id(fd, target.name)
        if file_id == OTHER:  # changed since `check_destination` looked
            raise UsageError(f"cannot write {what} to {path}: it changed while checked", hint=hint)
    except BaseException:
        os.close(fd)
        raise
    return Destination(target, what, hint, folder, fd, folder_id, missing, file_id)
