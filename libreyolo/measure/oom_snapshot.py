"""On CUDA, an out-of-memory step explained: the allocator's history is recorded over the
warmup (the untimed steps where a batch too big for the device fails), and an OOM there leaves
the snapshot beside the run's set and names, in its failure line, the sites holding the most.

Role: `AllocationHistory` starts `torch.cuda.memory._record_memory_history` (Python stacks, at
most MAX_ENTRIES actions: bounded memory and a bounded file) when measuring starts and stops it
as the window starts, so no measured step pays for the stacks. `explained` takes the snapshot
while the failed step's frames (and so its tensors) are still alive, writes it atomically to
`<project>/<mode>.oom_snapshot.pickle` (https://pytorch.org/memory_viz opens it; `libreyolo
profile memory` reads it) and returns the OutOfMemoryError whose line says what held the
device (`analysis.oom_sites`). An OOM inside the window (history off) or on the CPU is the
plain out-of-memory error it always was.

Must not: record during the window, or raise from its own failure to write: the OOM is what
the user must see.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import torch

from libreyolo.analysis.oom_sites import oom_view
from libreyolo.document.files import write_atomic
from libreyolo.errors import OutOfMemoryError
from libreyolo.measure.failures import MEMORY_HINT, is_out_of_memory
from libreyolo.render.oom_text import LINE_SITES, oom_line

MAX_ENTRIES = 100_000  # allocator actions kept: ~tens of MB of snapshot at most
SNAPSHOT_SUFFIX = ".oom_snapshot.pickle"


def snapshot_path(project: str, mode: str) -> Path:
    """Where a run of `mode` (run, infer) under `project` leaves its OOM snapshot."""
    return Path(project) / f"{mode}{SNAPSHOT_SUFFIX}"


class AllocationHistory:
    """The CUDA allocator's recent actions, recorded from `start()` to `stop()`."""

    def __init__(self, device: torch.device, path: Path) -> None:
        self._cuda = device.type == "cuda"
        self.path = path  # where an OOM's snapshot is written
        self.recording = False

    def start(self) -> None:
        if self._cuda and not self.recording:
            torch.cuda.memory._record_memory_history(
                max_entries=MAX_ENTRIES, stacks="python", context="alloc"
            )
            self.recording = True

    def stop(self) -> None:
        if self.recording:
            torch.cuda.memory._record_memory_history(enabled=None)
            self.recording = False

    def explained(self, err: BaseException) -> OutOfMemoryError | None:
        """For an OOM while recording: the snapshot written to `self.path` and the error that
        names what held the device; None otherwise (the caller re-raises `err`). Call it in
        the `except` clause, while the failed step's tensors are alive."""
        if not self.recording or not is_out_of_memory(err):
            return None
        snapshot = torch.cuda.memory._snapshot()
        self.stop()
        path = self.path
        view = oom_view(snapshot, origin=str(path), top=LINE_SITES)
        try:
            write_atomic(path, pickle.dumps(snapshot, protocol=4))
        except OSError as write_err:
            where = f"no snapshot ({write_err.strerror or write_err})"
        else:
            where = f"snapshot: {path} (libreyolo profile memory, or pytorch.org/memory_viz)"
        line = f"out of memory in the warmup: {oom_line(view)}; {where}"
        return OutOfMemoryError(line, hint=MEMORY_HINT)
