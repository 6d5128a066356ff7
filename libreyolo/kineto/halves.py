"""Read a large plain trace in two halves at once: this process the first, a forked child the rest.

Role: the two-CPU form of reading in parallel. workers.py's pool ships every 512 KiB run to a
worker and merges it back, which costs more than a second CPU saves; here the file is cut once, at
an event boundary (`}, {`) near the middle of its event array, and each half is read as a whole
trace of its own through a `FileView`: the first is the file up to the cut plus `]}` (`]` for a
bare list), the second the file's head (up to the array's `[`) plus everything from the cut to the
end, so the ordinary cutter, limits and metadata reading apply to both. The child emits its events
as parts into a temporary file, which this process merges after its own half, in file order. A cut
proves itself: the first half must close its event array exactly at the added `]`. Any failure in
either half (a false cut, a dead child, a malformed file) makes `read_in_halves` return None, and
the caller reads the file again in one process, which reports the real error. The child dies with
this process (lifeline.py), and its parts file has no name: a reader killed outright leaves neither
behind. Both halves read the one descriptor, so they read the same file; one that changed under
them is caught when it closes (source.py). Must not: interpret events, print, or import
torch/numpy.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import signal
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

import msgspec

from libreyolo.errors import AnalysisError
from libreyolo.kineto.lifeline import die_with_parent
from libreyolo.kineto.source import BOUNDARY, ByteSource, split_head

_SEARCH_BYTES = 1 << 16  # read at the middle to find a cut, widened as needed ...
_MAX_SEARCH_BYTES = 1 << 25  # ... up to this: events that long are too odd to cut between

Emit = Callable[[Any], None]


class FileView:
    """Stretches of a plain file, then `suffix`, read as one stream (with pread: the file's
    own offset is never moved, so a forked child can read the same descriptor)."""

    def __init__(self, fileno: int, stretches: list[tuple[int, int]], suffix: bytes = b"") -> None:
        self.fileno = fileno
        self.stretches = [(start, end) for start, end in stretches if end > start]
        self.suffix = suffix

    def read(self, size: int, /) -> bytes:
        while self.stretches:
            start, end = self.stretches[0]
            data = os.pread(self.fileno, min(size, end - start), start)
            if not data:  # the file shrank under us: what is left reads as its end
                self.stretches.clear()
                break
            start += len(data)
            if start < end:
                self.stretches[0] = (start, end)
            else:
                del self.stretches[0]
            return data
        data, self.suffix = self.suffix[:size], self.suffix[size:]
        return data


@dataclass(frozen=True, slots=True)
class Cut:
    """Where a trace splits in two (file offsets)."""

    fileno: int
    head_end: int  # just after the event array's `[`
    first_end: int  # just after the first half's last event (its `}`)
    second_start: int  # the second half's first event (its `{`)
    size: int
    bare: bool  # the file is a bare list of events, not an object

    def first(self) -> FileView:
        return FileView(self.fileno, [(0, self.first_end)], b"]" if self.bare else b"]}")

    def second(self) -> FileView:
        return FileView(self.fileno, [(0, self.head_end), (self.second_start, self.size)])

    @property
    def first_tail(self) -> bytes:
        """What the first half must leave after its array: the added `}` alone."""
        return b"" if self.bare else b"}"


def find_cut(source: ByteSource) -> Cut | None:
    """The cut of a plain trace whose event array holds at least `source.parallel_min` bytes,
    read from a fresh `source`; None for gzip, a small trace, or no likely boundary near the
    middle."""
    if source.fileno is None or source.size is None or source.size < source.parallel_min:
        return None  # judged before a byte is read: a small trace is read once, by one process
    head, rest = split_head(source)
    head_end = source.offset - len(rest)
    if source.size - head_end < source.parallel_min:
        return None
    middle = head_end + (source.size - head_end) // 2
    window = _SEARCH_BYTES
    while window <= _MAX_SEARCH_BYTES:
        text = os.pread(source.fileno, window, middle)
        found = _likely_boundary(text)
        if found is not None:
            first_end, second_start = middle + found.start() + 1, middle + found.end() - 1
            return Cut(source.fileno, head_end, first_end, second_start, source.size, head is None)
        if middle + len(text) >= source.size:
            break
        window *= 8
    return None


def _likely_boundary(text: bytes) -> re.Match[bytes] | None:
    """The first `}, {` in text with one whole object on each side up to its neighbours, so
    that a `}, {` in a string or in a nested list of objects is passed over (the first half's
    read is what proves the cut)."""
    matches = BOUNDARY.finditer(text)
    before, found = next(matches, None), next(matches, None)
    for after in matches:
        assert before is not None and found is not None
        if _is_object(text, before, found) and _is_object(text, found, after):
            return found
        before, found = found, after
    return None


def _is_object(text: bytes, before: re.Match[bytes], after: re.Match[bytes]) -> bool:
    try:
        return isinstance(msgspec.json.decode(text[before.end() - 1 : after.start() + 1]), dict)
    except msgspec.DecodeError:
        return False


def read_in_halves(
    cut: Cut,
    first: Callable[[FileView], bytes],
    second: Callable[[FileView, Emit], Any],
    merge: Emit,
) -> Any:
    """Read both halves at once and merge the second's parts after the first; return what
    `second` returned, or None when either half failed (nothing of the second is merged then).

    `first(view)` reads the first half here and returns the text after its event array;
    `second(view, emit)` runs in the child, emitting parts in file order.
    """
    if sys.platform != "linux" or threading.active_count() > 1:
        return None  # fork is only safe on Linux, and only while this process has one thread
    parent = os.getpid()
    with tempfile.TemporaryFile() as parts:  # unlinked at once: nobody has to remove it
        pid = os.fork()
        if pid == 0:  # the child: never returns
            _child(cut, second, parts, parent)
        reaped = False
        try:
            try:
                tail = first(cut.first())
            except AnalysisError:
                return None  # a false cut, or a malformed file: one process says which
            if tail != cut.first_tail:
                return None  # the array closed before the cut: it was no event boundary
            code = _exit_code(pid)
            reaped = True
            return _merge_parts(parts, merge) if code == 0 else None
        finally:
            if not reaped:
                _stop(pid)


def _child(cut: Cut, second: Callable[[FileView, Emit], Any], parts: BinaryIO, parent: int) -> None:
    """Read the second half into `parts`, then leave without Python's teardown (it would flush
    the parent's buffers and run its exit hooks a second time). Killed with the parent: it has
    nothing to clean up, and nobody would read what it wrote."""
    code = 1
    try:
        die_with_parent(signal.SIGKILL, parent)
        for each in (signal.SIGINT, signal.SIGTERM):  # the parent unwinds; it reaps us
            signal.signal(each, signal.SIG_DFL)

        def emit(part: Any) -> None:
            pickle.dump(part, parts, pickle.HIGHEST_PROTOCOL)

        emit(_End(second(cut.second(), emit)))
        parts.flush()
        code = 0
    finally:
        os._exit(code)


@dataclass(frozen=True, slots=True)
class _End:
    """The last record of the parts file: what the second half returned."""

    result: Any


def _exit_code(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _stop(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _merge_parts(parts: BinaryIO, merge: Emit) -> Any:
    parts.seek(0)
    while not isinstance(record := pickle.load(parts), _End):
        merge(record)
    return record.result
