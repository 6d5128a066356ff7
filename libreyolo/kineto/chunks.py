"""Cut the `traceEvents` array into runs of whole events and decode them, streaming.

Role: hand each run of complete events to msgspec in one call, so the file is never held whole and
no Python code runs per byte. A chunk is cut at its last `}, {` (a fast byte search) and the cut
is proved by decoding: a cut inside a string or a nested object cannot decode, and then the end of
the array (`}]`) or an exact string-aware scan decides. The body of a large trace goes to
workers.py first; whatever it hands back (the tail, or the rest after a false cut) is cut here.
Must not: interpret events, print, or import torch/numpy.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from libreyolo.kineto.source import (
    TOKEN,
    Source,
    as_array,
    decode_meta,
    last_boundary,
    open_source,
    split_head,
)
from libreyolo.kineto.workers import decode_in_workers

# Worker processes pay off once a trace is large: with fewer chunks than this left to read
# (gzip: read so far), this process decodes alone, as forking and shipping runs would cost more
# than it saves.
PARALLEL_MIN_CHUNKS = 3
# Candidate ends of the array (`}]`) tried before the string-aware scan takes over; each try
# decodes the whole chunk, and only a nested `[{...}]` inside an event can make one fail.
_ARRAY_END_TRIES = 3
_ARRAY_END = re.compile(rb"}\s*]")
_SPACE = re.compile(rb"\s*")
_COMMA = re.compile(rb"\s*,")
M = TypeVar("M")


@dataclass(frozen=True, slots=True)
class Handlers:
    """What becomes of runs of events; each run arrives as the text of a JSON array."""

    decode: Callable[[bytes], list[Any]]  # here: text -> events; raises msgspec.DecodeError
    add: Callable[[list[Any]], None]  # here: take decoded events
    work: Callable[[bytes], Any]  # in a worker (picklable): text -> part, None if undecodable
    merge: Callable[[Any], None]  # here: take a worker's part


def read_runs(
    path: str | os.PathLike[str], meta_type: type[M], handlers: Handlers, workers: int
) -> M:
    """Stream every event of a trace into `handlers`; return the top-level metadata.

    Raises:
        MissingFileError: the path does not exist or is not a regular file.
        AnalysisError: empty, not JSON, truncated, or not a Chrome trace.
    """
    with open_source(path) as source:
        head, rest = split_head(source)
        tail = _Cutter(source, handlers, workers).run(rest)
        return decode_meta(source, head, tail, meta_type)


class _Cutter:
    """Cuts runs of complete events off a buffer until the array closes."""

    def __init__(self, source: Source, handlers: Handlers, workers: int) -> None:
        self.source = source
        self.handlers = handlers
        self.workers = workers

    def run(self, buf: bytes) -> bytes:
        """Decode every event; return the text after the array's `]`."""
        parallel = self.workers > 1
        while True:
            if len(buf) < self.source.chunk and not self.source.eof:
                buf += self.source.read()
            if parallel and self.source.large_from_here(PARALLEL_MIN_CHUNKS * self.source.chunk):
                handlers, workers = self.handlers, self.workers
                buf = decode_in_workers(self.source, buf, handlers.work, handlers.merge, workers)
                parallel = False
                continue
            events, used, closed = self._cut(buf)
            if events:
                self.handlers.add(events)
            if closed:
                return buf[used:] + self.source.read_rest()
            if used:
                buf = buf[used:]
            elif self.source.eof:
                raise self.source.fail(f"truncated JSON at byte {self.source.offset}")
            else:
                buf += self.source.read(max(self.source.chunk, len(buf)))  # an event > buf

    def _cut(self, buf: bytes) -> tuple[list[Any], int, bool]:
        """(complete events at the head of buf, bytes used, whether the array closed)."""
        start = _skip_space(buf)
        if buf[start : start + 1] == b"]":
            return [], start + 1, True
        boundary = last_boundary(buf)
        if boundary is not None:
            events = self._try(buf, boundary.start() + 1)
            if events is not None:
                return events, boundary.end() - 1, False
        for tries, match in enumerate(_ARRAY_END.finditer(buf)):
            events = self._try(buf, match.start() + 1) if tries < _ARRAY_END_TRIES else None
            if events is not None:
                return events, match.end(), True
        return self._cut_carefully(buf)

    def _cut_carefully(self, buf: bytes) -> tuple[list[Any], int, bool]:
        """The string-aware cut, for chunks where every fast cut failed to decode."""
        last_end, close = _scan(buf)
        if close is not None:
            return self._decode(buf, close), close + 1, True
        comma = _COMMA.match(buf, last_end) if last_end else None
        if comma is None:
            return [], 0, False  # no complete event yet: the caller reads on
        return self._decode(buf, last_end), comma.end(), False

    def _try(self, buf: bytes, end: int) -> list[Any] | None:
        try:
            return self.handlers.decode(as_array(buf, end))
        except msgspec.DecodeError:
            return None

    def _decode(self, buf: bytes, end: int) -> list[Any]:
        try:
            return self.handlers.decode(as_array(buf, end))
        except msgspec.DecodeError as exc:
            raise self.source.json_error(exc, base=self.source.offset - len(buf) - 1) from exc


def _skip_space(buf: bytes) -> int:
    """Index of the first non-whitespace byte (without copying buf, unlike lstrip)."""
    match = _SPACE.match(buf)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _scan(buf: bytes) -> tuple[int, int | None]:
    """Exact nesting scan of events at depth 0 of the array: (end of the last complete event,
    index of the array's closing `]` or None)."""
    depth = 0
    last_end = 0
    for match in TOKEN.finditer(buf):
        char = buf[match.start()]
        if char == ord('"'):
            if match.end() == len(buf):
                break  # a string cut by the buffer end
            continue
        if char in b"{[":
            depth += 1
            continue
        depth -= 1
        if depth == 0:
            last_end = match.end()
        elif depth < 0:
            return last_end, match.start()
    return last_end, None
