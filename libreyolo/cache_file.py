"""The per-machine cache folder and its small JSON files (GEMM peaks, FLOP counts, composed
configs).

Role: `$LIBREYOLO_CACHE_DIR` (default `~/.cache/libreyolo`) and one top-level JSON object per
file, read only from a regular file under a size cap (a FIFO in its place would block a run, a
huge file is not ours) and written atomically. A file that cannot be read, parsed or written is
an empty cache, never an error: the caller measures or counts again.

The folder is created private (0700) and used only when it is this user's own and nobody else
may write it (`trusted_cache_dir`): another user's folder, or one anyone may write, could hold
entries someone else planted. Such a folder is not used at all; `cache_problem` says why, and
the collectors note it in the profile.

A top-level module (no layer of its own) so that the collectors (measure) and the composer
(config) can both use it. Must not: decide what an entry means (each cache checks its own), or
import torch/numpy/hydra.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path

from libreyolo.document.files import write_atomic

CACHE_DIR_ENV = "LIBREYOLO_CACHE_DIR"
DEFAULT_CACHE_DIR = Path("~/.cache/libreyolo")
CACHE_MAX_BYTES = 1 << 20  # a cache file larger than this is not ours: ignored


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_DIR_ENV) or DEFAULT_CACHE_DIR).expanduser()


def cache_problem() -> str | None:
    """Why the cache folder must not be used (another user's, or writable by others), or
    None: it is this user's own, or does not exist yet (it will be made 0700)."""
    folder = cache_dir()
    try:
        found = folder.stat()
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"the cache folder {folder} cannot be read ({err.strerror or err}): not used"
    if not stat.S_ISDIR(found.st_mode):
        return f"the cache {folder} is not a folder: not used"
    if hasattr(os, "getuid") and found.st_uid != os.getuid():
        return f"the cache folder {folder} belongs to another user: not used"
    if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"the cache folder {folder} is writable by others: not used "
            f"(chmod go-w {folder} to use it)"
        )
    return None


def trusted_cache_dir(*, create: bool = False) -> Path | None:
    """The cache folder (with `create`, made 0700 when it is new); None when `cache_problem`
    finds one."""
    if cache_problem() is not None:
        return None
    folder = cache_dir()
    if create:
        with contextlib.suppress(OSError):  # one that cannot be made: the write fails quietly
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def read_entries(name: str) -> dict[str, object]:
    """The top-level object of the cache file `name`; {} for anything else."""
    folder = trusted_cache_dir()
    if folder is None:
        return {}
    path = folder / name
    try:
        found = path.stat()
        if not stat.S_ISREG(found.st_mode) or found.st_size > CACHE_MAX_BYTES:
            return {}
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):  # RecursionError: `[[[[...` nested too deep
        return {}
    return data if isinstance(data, dict) else {}


def write_entries(name: str, entries: dict[str, object], *, sort_keys: bool = True) -> None:
    """Replace the cache file `name` with `entries` (in their own order without `sort_keys`); a
    cache that cannot be written is skipped (the next run measures again)."""
    folder = trusted_cache_dir(create=True)
    if folder is None:
        return
    payload = json.dumps(entries, indent=1, sort_keys=sort_keys).encode()
    with contextlib.suppress(OSError):
        write_atomic(folder / name, payload)
