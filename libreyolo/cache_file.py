"""The per-machine cache folder and its files (GEMM peaks, FLOP counts, composed configs, ONNX
exports).

Role: `$LIBREYOLO_CACHE_DIR` (default `~/.cache/libreyolo`) and one top-level JSON object per
file, read only from a regular file under a size cap (a FIFO in its place would block a run, a
huge file is not ours) and written atomically. A file that cannot be read, parsed or written is
an empty cache, never an error: the caller measures or counts again.

The folder is created private (0700) and used only when it is this user's own and nobody else
may write it: another user's folder, or one anyone may write, could hold entries someone else
planted. Such a folder is not used at all; `cache_problem` says why, and the collectors note it
in the profile.

Every entry file is sealed: it holds its entries and their HMAC-SHA256 under the cache's own
secret (`seal.key`, 0600, made on the first write), over the entries and the file's place. An
entry edited by hand or by another program, a file copied under another entry's name, or one
written before seals is not read (the caller measures again and writes it sealed), so what the
cache holds is only ever what this tool computed for that key. (The ONNX exports are checked
against the eager forward instead.)

Nothing in the cache is reached through a symbolic link (the cache makes none, so one there
was planted, and a write through it would land outside): the folder and each subfolder are
opened with O_NOFOLLOW and every read, write, stat and removal is relative to that descriptor,
a file opened with O_NOFOLLOW, a new one as a temporary file (O_CREAT|O_EXCL, a random name)
renamed into place. A linked folder or file is not used; `cache_problem` names it.

A top-level module (no layer of its own) so that the collectors (measure) and the composer
(config) can both use it. Must not: decide what an entry means (each cache checks its own), or
import torch/numpy/hydra.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import NamedTuple

CACHE_DIR_ENV = "LIBREYOLO_CACHE_DIR"
DEFAULT_CACHE_DIR = Path("~/.cache/libreyolo")
CACHE_MAX_BYTES = 1 << 20  # a cache file larger than this is not ours: ignored
MAX_LISTED = 10_000  # entries looked at per folder: a folder stuffed with more is not walked
STALE_TEMP_S = 3600.0  # a temporary file this old is a killed writer's, not one under way
MAX_NAMED_LINKS = 3  # links named in the note; the rest counted
SEAL_KEY_NAME = "seal.key"  # the cache's secret: every entry file carries its HMAC
SEAL_KEY_BYTES = 32
FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO in an entry's place opens at once (and is then refused), never blocks.
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP = re.compile(r"\..+\.[0-9a-f]{16}\.tmp")  # what `write_file` names its temporary files


class Entry(NamedTuple):
    """A regular file in a cache folder, as listed without following a link."""

    name: str
    mtime_ns: int
    size_bytes: int


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_DIR_ENV) or DEFAULT_CACHE_DIR).expanduser()


def cache_problem() -> str | None:
    """Why the cache folder must not be used (another user's, writable by others, a link), or
    which symbolic links inside it are not used; None when all of it is usable or it does not
    exist yet (it will be made 0700)."""
    root, problem = _open_root(create=False)
    if root is None:
        return problem
    try:
        return _links_note(cache_dir(), _links_inside(root))
    finally:
        os.close(root)


@contextlib.contextmanager
def cache_folder(subfolder: str | None = None, *, create: bool = False) -> Iterator[int | None]:
    """A descriptor of the cache folder, or of its `subfolder` (one name), opened without
    following a link and closed after; with `create`, each made 0700 when new. None when
    either is missing, not a folder, a link, or not safely ours (`cache_problem`)."""
    root, _ = _open_root(create)
    folder = root
    if root is not None and subfolder is not None:
        try:
            folder = _open_subfolder(root, _one_name(subfolder), create)
        finally:
            os.close(root)
    try:
        yield folder
    finally:
        if folder is not None:
            os.close(folder)


def read_entries(name: str, *, subfolder: str | None = None) -> dict[str, object]:
    """The entries of the cache file `name` (in `subfolder`) when its seal is this cache's
    for that name; {} for anything else (unsealed, edited, moved, or not a sealed object)."""
    key = _seal_key(create=False)
    if key is None:
        return {}
    with cache_folder(subfolder) as folder:
        data = None if folder is None else read_file(folder, name, CACHE_MAX_BYTES)
    if data is None:
        return {}
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: `[[[[...` nested too deep
        return {}
    if not isinstance(parsed, dict) or set(parsed) != {"seal", "entries"}:
        return {}
    entries, seal = parsed["entries"], parsed["seal"]
    if not isinstance(entries, dict) or not isinstance(seal, str):
        return {}
    expected = _seal(key, _place(name, subfolder), entries)
    return entries if hmac.compare_digest(seal, expected) else {}


def write_entries(
    name: str, entries: dict[str, object], *, sort_keys: bool = True, subfolder: str | None = None
) -> None:
    """Replace the cache file `name` (in `subfolder`) with `entries` (in their own order without
    `sort_keys`), sealed; a cache that cannot be written is skipped (the next run measures
    again)."""
    payload = sealed_payload(name, entries, sort_keys=sort_keys, subfolder=subfolder)
    if payload is None:
        return
    with cache_folder(subfolder, create=True) as folder, contextlib.suppress(OSError):
        if folder is not None:
            write_file(folder, name, payload)


def sealed_payload(
    name: str, entries: dict[str, object], *, sort_keys: bool = True, subfolder: str | None = None
) -> bytes | None:
    """The bytes of the cache file `name` (in `subfolder`) holding `entries`, sealed with this
    cache's key (made when there is none yet); None when the cache cannot be used."""
    key = _seal_key(create=True)
    if key is None:
        return None
    sealed = {"seal": _seal(key, _place(name, subfolder), entries), "entries": entries}
    return json.dumps(sealed, indent=1, sort_keys=sort_keys).encode()


def _place(name: str, subfolder: str | None) -> str:
    return _one_name(name) if subfolder is None else f"{_one_name(subfolder)}/{_one_name(name)}"


def _seal(key: bytes, place: str, entries: dict[str, object]) -> str:
    """HMAC-SHA256 of the entries and where they belong: an entry edited by hand or by another
    program, or a file copied under another entry's name, no longer matches."""
    canonical = json.dumps(entries, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    message = place.encode() + b"\0" + canonical.encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _seal_key(*, create: bool) -> bytes | None:
    """This cache's secret (`SEAL_KEY_NAME`, 0600, made on the first write), or None: no
    usable cache, or no key yet. A key of the wrong size is replaced, which unseals every
    entry (each is measured again once)."""
    with cache_folder(create=create) as root:
        if root is None:
            return None
        key = read_file(root, SEAL_KEY_NAME, SEAL_KEY_BYTES)
        if key is not None and len(key) == SEAL_KEY_BYTES:
            return key
        if not create:
            return None
        fresh = secrets.token_bytes(SEAL_KEY_BYTES)
        try:
            if key is None:  # absent (or unreadable: then this fails and nothing is used)
                fd = os.open(SEAL_KEY_NAME, _CREATE, 0o600, dir_fd=root)
                with os.fdopen(fd, "wb") as out:
                    out.write(fresh)
            else:
                write_file(root, SEAL_KEY_NAME, fresh)
        except FileExistsError:  # another run made it first: theirs
            key = read_file(root, SEAL_KEY_NAME, SEAL_KEY_BYTES)
            return key if key is not None and len(key) == SEAL_KEY_BYTES else None
        except OSError:
            return None
        return fresh


@contextlib.contextmanager
def open_entry(folder: int, name: str) -> Iterator[io.BufferedReader | None]:
    """The regular file `name` in `folder` open for reading, or None: missing, a link, a
    FIFO, a folder, unreadable."""
    try:
        fd = os.open(_one_name(name), _READ, dir_fd=folder)
    except OSError:  # a link is ELOOP here
        yield None
        return
    with os.fdopen(fd, "rb") as file:
        yield file if stat.S_ISREG(os.fstat(fd).st_mode) else None


def read_file(folder: int, name: str, max_bytes: int) -> bytes | None:
    """The bytes of the regular file `name` in `folder` when at most `max_bytes`, else None."""
    try:
        with open_entry(folder, name) as file:
            if file is None or os.fstat(file.fileno()).st_size > max_bytes:
                return None
            data = file.read(max_bytes + 1)  # a file grown since its stat is still capped
    except OSError:
        return None
    return data if len(data) <= max_bytes else None


def write_file(folder: int, name: str, payload: bytes) -> None:
    """Put `payload` at `name` in `folder` so that readers see the old file or the new: a new
    temporary file of a random name, renamed over it. A link at `name` is replaced, never
    written through. OSError when it cannot be written (nothing is left behind)."""
    temp = f".{_one_name(name)}.{secrets.token_hex(8)}.tmp"
    fd = os.open(temp, _CREATE, 0o600, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder)
        raise


def own_files(folder: int, pattern: re.Pattern[str]) -> list[Entry]:
    """The regular files in `folder` whose whole name matches `pattern` (the cache's own
    names), oldest first; links and everything else are left out."""
    found = []
    for item in _listing(folder):
        if pattern.fullmatch(item.name) and item.is_file(follow_symlinks=False):
            with contextlib.suppress(OSError):  # removed since it was listed
                status = item.stat(follow_symlinks=False)
                found.append(Entry(item.name, status.st_mtime_ns, status.st_size))
    return sorted(found, key=lambda entry: (entry.mtime_ns, entry.name))


def stale_temp_files(folder: int) -> list[str]:
    """`write_file`'s temporary files in `folder` left by a writer killed over
    `STALE_TEMP_S` ago."""
    oldest_ns = time.time_ns() - int(STALE_TEMP_S * 1e9)
    return [entry.name for entry in own_files(folder, _TEMP) if entry.mtime_ns < oldest_ns]


def remove_files(folder: int, names: Iterable[str]) -> None:
    """Unlink each of `names` in `folder` (a link itself, never what it names)."""
    for name in names:
        with contextlib.suppress(OSError):  # another process removed it first
            os.unlink(_one_name(name), dir_fd=folder)


def _open_root(create: bool) -> tuple[int | None, str | None]:
    """A descriptor of the cache folder when it is usable, else None and why (None too for
    a folder that does not exist)."""
    folder = cache_dir()
    if create:
        with contextlib.suppress(OSError):  # one that cannot be made is not opened below
            folder.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(folder, 0o700)
    try:
        root = os.open(folder, FOLDER_FLAGS)
    except FileNotFoundError:
        return None, None
    except OSError as err:
        return None, _unopened(folder, err)
    problem = _owner_problem(os.fstat(root), folder)
    if problem is not None:
        os.close(root)
        return None, problem
    return root, None


def _unopened(folder: Path, err: OSError) -> str:
    with contextlib.suppress(OSError):
        found = os.lstat(folder)
        if stat.S_ISLNK(found.st_mode):
            return (
                f"the cache folder {folder} is a symbolic link: not used "
                f"(set {CACHE_DIR_ENV} to the folder it names)"
            )
        if not stat.S_ISDIR(found.st_mode):
            return f"the cache {folder} is not a folder: not used"
    return f"the cache folder {folder} cannot be read ({err.strerror or err}): not used"


def _owner_problem(found: os.stat_result, folder: Path) -> str | None:
    """Why the cache folder (or a subfolder) `found` could hold someone else's entries."""
    if hasattr(os, "getuid") and found.st_uid != os.getuid():
        return f"the cache folder {folder} belongs to another user: not used"
    if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"the cache folder {folder} is writable by others: not used "
            f"(chmod go-w {folder} to use it)"
        )
    return None


def _open_subfolder(root: int, name: str, create: bool) -> int | None:
    if create:
        with contextlib.suppress(OSError):  # there already, or cannot be: opened or not below
            os.mkdir(name, 0o700, dir_fd=root)
    try:
        folder = os.open(name, FOLDER_FLAGS, dir_fd=root)
    except OSError:  # missing, a file, or a link (ELOOP): not used
        return None
    if _owner_problem(os.fstat(folder), cache_dir() / name) is not None:
        os.close(folder)
        return None
    return folder


def _listing(folder: int) -> list[os.DirEntry[str]]:
    """At most `MAX_LISTED` entries of `folder` (a descriptor; scandir reads a copy of it)."""
    try:
        with os.scandir(folder) as listing:
            return list(islice(listing, MAX_LISTED))
    except OSError:
        return []


def _links_inside(root: int) -> list[str]:
    """The symbolic links in the cache folder and in its subfolders, as relative names."""
    found = []
    for item in _listing(root):
        if item.is_symlink():
            found.append(item.name)
        elif item.is_dir(follow_symlinks=False):
            try:
                folder = os.open(item.name, FOLDER_FLAGS, dir_fd=root)
            except OSError:
                continue
            try:
                found += [f"{item.name}/{e.name}" for e in _listing(folder) if e.is_symlink()]
            finally:
                os.close(folder)
    return sorted(found)


def _links_note(folder: Path, links: list[str]) -> str | None:
    if not links:
        return None
    named = ", ".join(links[:MAX_NAMED_LINKS])
    more = len(links) - MAX_NAMED_LINKS
    if more > 0:
        named += f" and {more} more"
    return (
        f"symbolic links in the cache folder {folder} are not used (nothing is read or "
        f"written through them): {named}"
    )


def _one_name(name: str) -> str:
    """`name` when it is one entry of a folder: a path would be resolved through links."""
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"not one name in a cache folder: {name!r}")
    return name
