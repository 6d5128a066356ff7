"""The libreyolo 1.x trainer last measured on this machine, for one line of help.

Role: `profile run --trainer` remembers the interpreter it measured (`trainer.json` in the
per-machine cache); `libreyolo train ...` here (this install has no `train`) names that
environment's own `libreyolo` in its error, so the user's training command is one paste away.
What is remembered only ever words a hint: it never chooses what a run measures. An entry that
is not an absolute path to an executable file, or holds control characters, is no entry.
Must not: import torch, numpy or Hydra (every reader's error path may read it).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from libreyolo.cache_file import read_entries, write_entries

FILE_NAME = "trainer.json"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_PATH_CHARS = 4096


def remember_trainer(python: str) -> None:
    """Record `python` (absolute) as the trainer last measured; a cache that cannot be
    written is skipped."""
    write_entries(FILE_NAME, {"python": python})


def known_trainer() -> str | None:
    """The interpreter last remembered, when it still is a usable one; else None."""
    python = read_entries(FILE_NAME).get("python")
    if not isinstance(python, str) or len(python) > MAX_PATH_CHARS or _CONTROL.search(python):
        return None
    path = Path(python)
    if not path.is_absolute() or not path.is_file() or not os.access(path, os.X_OK):
        return None
    return python
