"""Cut the `traceEvents` array into runs of whole events and decode them, streaming.

Role: hand each run of complete events to msgspec in one call, so the file is never held whole and
no Python code runs per byte. A chunk is cut at its last `}, {` (a fast byte search) and the cut
is proved by decoding: a cut inside a string or a nested object cannot decode, and then the end of
the array (`}]`) or an exact string-aware scan decides. Whitespace between events is dropped as
it is read, and an event longer than the buffer is read on its own, squeezed (compact.py), so no
padding or long string makes the buffer grow. The body of a large trace goes to workers.py first;
whatever it hands back (the tail, the rest after a false cut, or a stretch with no cut) is cut
here. Must not: interpret events, print, or import torch/numpy.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from libreyolo.document.limits import MAX_INPUT_BYTES
from libreyolo.kineto.compact import Until
from libreyolo.kineto.source import (
    TOKEN,
    WHITESPACE,
    ByteSource,
    as_array,
    decode_meta,
    last_boundary,
    open_source,
    skip_space,
    split_head,
)
from libreyolo.kineto.workers import decode_in_workers

# Candidate ends of the array (`}]`) tried before the string-aware scan takes over; each try
# decodes the whole chunk, and only a nested `[{...}]` inside an event can make one fail.
_ARRAY_END_TRIES = 3
_ARRAY_END = re.compile(rb"}\s*]")
_COMMA = re.compile(rb"[ \t\r\n]*,")
_COMMA_BYTE, _CLOSE_BRACKET, _OPEN_BRACE = ord(","), ord("]"), ord("{")
_SPACE_BYTES = frozenset(WHITESPACE[i : i + 1] for i in range(len(WHITESPACE)))
M = TypeVar("M")


@dataclass(frozen=True, slots=True)
class Handlers:
    """What becomes of runs of events; each run arrives as the text of a JSON array."""

    decode: Callable[[bytes], list[Any]]  # here: text -> events; raises msgspec.DecodeError
    add: Callable[[list[Any]], None]  # here: take decoded events
    work: Callable[[bytes], Any]  # in a worker (picklable): text -> part, None if undecodable
    merge: Callable[[Any], None]  # here: take a worker's part


def read_runs(
    path: str | os.PathLike[str],
    meta_type: type[M],
    handlers: Handlers,
    workers: int,
    *,
    max_input_bytes: int = MAX_INPUT_BYTES,
) -> M:
    """Stream every event of a trace into `handlers`; return the top-level metadata.

    Raises:
        MissingFileError: the path does not exist or is not a regular file.
        AnalysisError: empty, not JSON, truncated, not a Chrome trace, or over a limit.
    """
    with open_source(path, max_input_bytes=max_input_bytes) as source:
        head, tail = read_source(source, handlers, workers)
        return decode_meta(source, head, tail, meta_type)


def read_source(source: ByteSource, handlers: Handlers, workers: int) -> tuple[bytes | None, bytes]:
    """Stream every event of an opened trace into `handlers`; return (the text before the
    event array, squeezed, None for a bare list; the text after it, squeezed).

    Raises:
        AnalysisError: empty, not JSON, truncated, not a Chrome trace, or over a limit.
    """
    head, rest = split_head(source)
    return head, _Cutter(source, handlers, workers).run(rest)


class _Cutter:
    """Cuts runs of complete events off a buffer until the array closes."""

    def __init__(self, source: ByteSource, handlers: Handlers, workers: int) -> None:
        self.source = source
        self.handlers = handlers
        self.workers = workers
        self.comma_due = False  # an event was taken without the comma that must follow it

    def run(self, buf: bytes) -> bytes:
        """Decode every event; return the text after the array's `]`, squeezed."""
        parallel = self.workers > 1
        while True:
            if len(buf) < self.source.chunk and not self.source.eof:
                buf += self.source.read()
            if parallel and self.source.large_from_here():
                handlers, workers = self.handlers, self.workers
                buf = decode_in_workers(self.source, buf, handlers.work, handlers.merge, workers)
                parallel = False
                continue
            buf = self._drop_separator(buf)
            if not buf:
                if self.source.eof:
                    raise self.source.fail(f"truncated JSON at byte {self.source.offset}")
                continue
            events, used, closed = self._cut(buf)
            if events:
                self.handlers.add(events)
            if closed:
                return self._tail(buf[used:])
            if used:
                buf = buf[used:]
            elif self.source.eof:
                raise self.source.fail(f"truncated JSON at byte {self.source.offset}")
            else:
                buf = self._long_event(buf)  # an event longer than the buffer

    def _drop_separator(self, buf: bytes) -> bytes:
        """buf without its leading whitespace, and without the comma owed after an event."""
        buf = _lstrip(buf)
        if self.comma_due and buf:
            if buf[0] == _COMMA_BYTE:
                self.comma_due = False
                buf = _lstrip(buf[1:])
            elif buf[0] != _CLOSE_BRACKET:
                at = self.source.offset - len(buf)
                raise self.source.fail(f"invalid JSON at byte {at}: expected ',' or ']'")
        return buf

    def _long_event(self, buf: bytes) -> bytes:
        """Read the event at the head of buf to its end, squeezed, and decode it; return the
        bytes after it."""
        at = self.source.offset - len(buf)
        if buf[0] != _OPEN_BRACE:
            raise self.source.fail(f"not a Chrome trace (the event at byte {at} is no object)")
        event = self.source.compactor(Until.VALUE_END, f"an event at byte {at}")
        rest = self.source.read_through(event, buf)
        if rest is None:
            raise self.source.fail(f"truncated JSON at byte {self.source.offset}")
        try:
            events = self.handlers.decode(b"".join((b"[", event.text(), b"]")))
        except msgspec.DecodeError as exc:
            raise self.source.json_error(exc, base=None) from exc
        self.handlers.add(events)
        self.comma_due = True
        return rest

    def _tail(self, buf: bytes) -> bytes:
        """The text after the array's `]` to the end of the file, squeezed."""
        tail = self.source.compactor(Until.END, "the text after traceEvents")
        self.source.read_through(tail, buf)
        return tail.text()

    def _cut(self, buf: bytes) -> tuple[list[Any], int, bool]:
        """(complete events at the head of buf, bytes used, whether the array closed)."""
        start = skip_space(buf)
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
        if not last_end:
            return [], 0, False  # no complete event yet: the caller reads it on its own
        comma = _COMMA.match(buf, last_end)
        if comma is None:  # its comma comes later, after whitespace (or is missing)
            self.comma_due = True
            return self._decode(buf, last_end), last_end, False
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


def _lstrip(buf: bytes) -> bytes:
    """buf without its leading whitespace (buf itself, not a copy, when it has none)."""
    return buf.lstrip(WHITESPACE) if buf[:1] in _SPACE_BYTES else buf


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
