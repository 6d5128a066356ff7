"""Where a writer may put a file the user named: a regular file (replaced) or a path that does
not exist yet (created, with any missing parent folders).

Role: the one check a writer calls before it writes to a destination it was given (today
`libreyolo profile report`). The path is judged by `lstat`, so a symbolic link is refused as a
link, never followed: an atomic write renames over the link itself (`-o /dev/stdout`), and over
a device, FIFO or socket node it would put a regular file in the node's place (`-o /dev/null`
as root, for every process on the machine). A folder, a path whose last part names a folder
(`newdir/`, `x/.`: it must not become a file `newdir`) and any of the writer's own inputs (the
same file by device and inode, so another spelling or a linked parent folder is caught) are
refused too. Each refusal is a `UsageError` (exit 2) raised before anything is written.

Must not: create, open or write anything (only `lstat` and `stat` run), or import beyond the
standard library.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from libreyolo.errors import UsageError

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)
_FOLDER_PARTS = ("", ".", "..")  # a last part that names a folder: `dir/`, `dir/.`, `dir/..`


def _last_part(path: str) -> str:
    for separator in filter(None, (os.sep, os.altsep)):
        path = path.rsplit(separator, 1)[-1]
    return path


def _same_file(info: os.stat_result, path: str | os.PathLike[str]) -> bool:
    try:
        other = os.stat(path)  # an input behind a link: its data is what must be kept
    except (OSError, ValueError):  # gone, unreadable or stdin: it cannot be this file
        return False
    return (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino)


def check_destination(
    path: str,
    inputs: Iterable[str | os.PathLike[str]] = (),
    *,
    what: str,
    hint: str,
) -> Path:
    """`path` as a Path when `what` may be written there: a regular file that is none of
    `inputs`, or a path that does not exist yet; UsageError (exit 2, `hint`) otherwise."""
    refuse = f"cannot write {what} to {path}"
    if not path:
        raise UsageError(f"cannot write {what} to an empty path", hint=hint)
    if (last := _last_part(path)) in _FOLDER_PARTS:
        raise UsageError(f"{refuse}: a path ending in {last or '/'} names a folder", hint=hint)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return Path(path)  # a new file; the writer creates missing parent folders
    except (OSError, ValueError) as err:  # under a file, too long, no permission, a NUL byte
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise UsageError(f"{refuse}: {reason}", hint=hint) from None
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
        raise UsageError(f"{refuse}: it is {kind}", hint=hint)
    if any(_same_file(info, source) for source in inputs):
        raise UsageError(f"{refuse}: it is one of {what}'s inputs", hint=hint)
    return Path(path)
