"""Run directories: build a new set of files aside, then swap it in only when complete.

Role: a collector writes `profile.json` and `profile_trace.json` into a fresh staging directory
next to the target (`<project>/infer` or `<project>/run`); `commit()` moves the finished set into
place and only then removes the previous set. An interrupted or failed run discards its staging
directory and leaves the previous profile untouched, and a stale `profile.json` can never pass
for a new one (1.6.0's exit-3 bug, reference-behaviour.md §15 item 12). Must not write profiles
itself (the collector does, through `document.files.save`).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from types import TracebackType

PROFILE_NAME = "profile.json"
TRACE_NAME = "profile_trace.json"


class StagedRun:
    """A staging directory for one run; use as a context manager and call `commit()`.

    Leaving the block without `commit()` (an exception, Ctrl-C) deletes the staging directory.
    """

    def __init__(self, target: str | os.PathLike[str]) -> None:
        self.target = Path(target)
        self.target.parent.mkdir(parents=True, exist_ok=True)
        # Same parent, so the final rename never crosses a filesystem.
        self.staging = _fresh_dir(self.target, "partial")
        self.committed = False

    def __enter__(self) -> StagedRun:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.committed:
            self.discard()

    def path(self, name: str) -> Path:
        """Where a file of the new set is written now (inside the staging directory)."""
        return self.staging / name

    def final(self, name: str) -> Path:
        """Where that file lies after `commit()`."""
        return self.target / name

    def commit(self) -> Path:
        """Put the finished set at the target, replacing the previous set; returns the target.

        Two renames: the old set moves aside, the new one into place. Readers see either the
        old or the new directory; only a crash between the renames leaves the old set under
        a `.old-` name beside the target instead of at it.
        """
        old: Path | None = None
        if self.target.exists():
            old = _fresh_dir(self.target, "old")
            os.replace(self.target, old / self.target.name)
        os.replace(self.staging, self.target)
        self.committed = True
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return self.target

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def _fresh_dir(target: Path, tag: str) -> Path:
    """A new hidden sibling of `target`; os.mkdir honours the umask (mkdtemp would force 0700)."""
    while True:
        path = target.parent / f".{target.name}.{tag}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path


def utc_now() -> str:
    """The `created` stamp: UTC, ISO 8601, whole seconds."""
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
