"""The per-machine cache folder and its small JSON files (GEMM peaks, FLOP counts, composed
configs).

Role: `$LIBREYOLO_CACHE_DIR` (default `~/.cache/libreyolo`) and one top-level JSON object per
file, read only from a regular file under a size cap (a FIFO in its place would block a run, a
huge file is not ours) and written atomically. A file that cannot be read, parsed or written is
an empty cache, never an error: the caller measures or counts again.

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


def read_entries(name: str) -> dict[str, object]:
    """The top-level object of the cache file `name`; {} for anything else."""
    path = cache_dir() / name
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
    payload = json.dumps(entries, indent=1, sort_keys=sort_keys).encode()
    with contextlib.suppress(OSError):
        write_atomic(cache_dir() / name, payload)
