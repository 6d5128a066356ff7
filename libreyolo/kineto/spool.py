"""The cpu_op and call columns of a trace spilled to temporary files, block by block, and read back.

Role: cpu_ops are most of a trace's events (93 % of a CPU training trace) and the reduction needs
them only once, in one ordered sweep after the window and the phases are known (op_stream.py).
So while a trace is decoded its ops go to disk in blocks of BLOCK_OPS (24 bytes an op); only
the few ops the window and the phase map are built from (ProfilerStep, phase labels: `keep`)
stay in memory, with the threads that run the ops `mark` names (the autograd engine's). Memory
is then one block whatever the trace's size. The runtime and driver calls (a GPU trace has two or
three a kernel, 32 bytes each) go to a `CallSpool` the same way: the reduction reads them twice, in
file order (the correlation join, then the call tallies). The files have no name
(`TemporaryFile`): a reader killed outright leaves none behind. Must not: interpret names
itself, print, or import torch/numpy.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from math import inf
from operator import add

from libreyolo.kineto.columns import Columns

# 1.5 MB of columns held before they go to disk: big enough that writes are few, small enough
# to be noise beside the decoder's own chunk.
BLOCK_OPS = 1 << 16


class OpSpool:
    """cpu_op columns (ts, dur, name, thread) on disk; `kept` holds the ops `keep` wants, and
    `marked_threads` the threads of those `mark` names."""

    def __init__(self, keep: Callable[[str], bool], mark: Callable[[str], bool]) -> None:
        self.block = Columns()  # the builder appends here
        self.kept = Columns()
        self.marked_threads: set[int] = set()
        self.count = 0
        self._tests = (keep, mark)
        self._classes: dict[int, tuple[bool, bool]] = {}  # name id -> (kept, marked)
        self._blocks: list[int] = []  # ops per block, in file order
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()

    def flush(self, names: list[str], *, full_only: bool = True) -> None:
        """Write the block to disk (when full, or whatever it holds with full_only=False)."""
        block = self.block
        size = len(block)
        if not size or (full_only and size < BLOCK_OPS):
            return
        self.count += size
        classes = [(nid, self._class(nid, names)) for nid in block.present]
        wanted = {nid for nid, (kept, _) in classes if kept}
        marked = {nid for nid, (_, mark) in classes if mark}
        if marked and not self.marked_threads.issuperset(block.thread):
            self.marked_threads.update(block.thread[i] for i in block.rows_named(marked))
        for i in block.rows_named(wanted):
            self.kept.ts.append(block.ts[i])
            self.kept.dur.append(block.dur[i])
            self.kept.name.append(block.name[i])
            self.kept.thread.append(block.thread[i])
        self.kept.present.update(wanted)
        for column in (block.ts, block.dur, block.name, block.thread):
            column.tofile(self._file)
        self._blocks.append(size)
        self.block = Columns()

    def _class(self, name_id: int, names: list[str]) -> tuple[bool, bool]:
        found = self._classes.get(name_id)
        if found is None:
            keep, mark = self._tests
            name = names[name_id]
            found = self._classes[name_id] = (keep(name), mark(name))
        return found

    def bounds(self) -> tuple[float, float]:
        """(earliest start, latest end) of every op: one more read of the spool, for traces
        without steps."""
        return _bounds(self.blocks())

    def blocks(self) -> Iterator[Columns]:
        """Every block, in file order (ts, dur, name and thread filled; `present` empty)."""
        self._file.seek(0)
        for size in self._blocks:
            block = Columns()
            for column in (block.ts, block.dur, block.name, block.thread):
                column.fromfile(self._file, size)
            yield block

    def load(self) -> Columns:
        """Every op as one set of columns (the whole-trace path, for ops out of order)."""
        whole = Columns()
        for block in self.blocks():
            whole.ts.extend(block.ts)
            whole.dur.extend(block.dur)
            whole.name.extend(block.name)
            whole.thread.extend(block.thread)
        whole.present = set(whole.name)
        return whole

    def close(self) -> None:
        self._file.close()


class CallSpool:
    """Call columns (ts, dur, name, thread, corr) on disk; the builder appends to `block`."""

    def __init__(self) -> None:
        self.block = Columns()
        self.count = 0
        self._blocks: list[int] = []  # calls per block, in file order
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()

    def flush(self, *, full_only: bool = True) -> None:
        """Write the block to disk (when full, or whatever it holds with full_only=False)."""
        block = self.block
        size = len(block)
        if not size or (full_only and size < BLOCK_OPS):
            return
        self.count += size
        for column in (block.ts, block.dur, block.name, block.thread, block.corr):
            column.tofile(self._file)
        self._blocks.append(size)
        self.block = Columns()

    def blocks(self) -> Iterator[Columns]:
        """Every block, in file order (`present` empty)."""
        self._file.seek(0)
        for size in self._blocks:
            block = Columns()
            for column in (block.ts, block.dur, block.name, block.thread, block.corr):
                column.fromfile(self._file, size)
            yield block

    def bounds(self) -> tuple[float, float]:
        """(earliest start, latest end) of every call."""
        return _bounds(self.blocks())

    def close(self) -> None:
        self._file.close()


def _bounds(blocks: Iterator[Columns]) -> tuple[float, float]:
    start, end = inf, -inf
    for block in blocks:
        start = min(start, min(block.ts))
        end = max(end, max(map(add, block.ts, block.dur)))
    return start, end
