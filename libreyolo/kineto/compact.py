"""JSON text read piece by piece and kept small: padding squeezed out, strings and text capped.

Role: the bounded half of cutting a trace. The fast cutter (chunks.py) holds one buffer; what does
not fit in one (the keys before the event array, the keys after it, an event longer than a
buffer) is scanned here as it is read. Strings and brackets are found by regexes that run in C,
and a run of whitespace outside strings becomes one space, which JSON cannot tell apart, so
padding costs time but no memory; a string or a whole text over its cap is refused, not kept.
Each byte is scanned once: a piece ending inside a string resumes there. Must not: decode JSON,
print, or import torch/numpy.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum

from libreyolo.errors import AnalysisError

_STRUCTURE = re.compile(rb'[][{}"]')  # a string's opening quote or a bracket
_STRING_BODY = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.S)  # up to the closing quote
_LONG_SPACE = re.compile(rb"[ \t\r\n]{64,}")  # shorter runs are kept: cutting them costs more
WHITESPACE = b" \t\r\n"  # JSON's whitespace
_SHORT_STRING = 64  # a string this short that a piece cuts is carried whole to the next piece
_EVENTS_KEY = b'"traceEvents"'
_QUOTE, _COLON, _OPEN_BRACKET = ord('"'), b":", ord("[")
_OPENING = b"{["


class Until(Enum):
    """Where the text ends."""

    VALUE_END = "value"  # the bracket that closes the value opened first (one event)
    EVENTS_START = "head"  # the `[` after a top-level "traceEvents" key (or the object's end)
    END = "end"  # the end of the file (the keys after the event array)


class Compactor:
    """Takes pieces of JSON text and keeps them squeezed, until `until` or the file ends.

    `fail` turns a reason into the reader's AnalysisError; `what` names the text in the message
    when it grows past `limit_bytes` (after squeezing).
    """

    def __init__(
        self,
        until: Until,
        fail: Callable[[str], AnalysisError],
        *,
        what: str,
        limit_bytes: int,
        string_limit_bytes: int,
    ) -> None:
        self.until, self.fail, self.what = until, fail, what
        self.limit, self.string_limit = limit_bytes, string_limit_bytes
        self.parts: list[bytes] = []
        self.size = 0
        self.depth = 0
        self.carry = b""  # raw bytes cut off a piece's end, scanned again with the next piece
        self.string_at: int | None = None  # file offset of an open string's quote
        self.string_bytes = 0
        self.body_end = 0
        self.gap: bytes | None = None  # after the traceEvents key: what follows it, unspaced
        self.found_events = False  # EVENTS_START: the array was found (else the object ended)
        self.squeezed = False  # whether any whitespace was cut (offsets in text() then drift)

    def text(self) -> bytes:
        """Everything kept so far (and the carried bytes, at the end of the file)."""
        return b"".join((*self.parts, self.carry))

    def feed(self, piece: bytes, offset: int) -> bytes | None:
        """Scan `piece` (at file offset `offset`); the raw bytes after the end of the text, or
        None when the text goes on into the next piece."""
        data, base = self.carry + piece, offset - len(self.carry)
        self.carry = b""
        pos = keep = 0  # data[keep:pos] is kept as it is
        if self.string_at is not None:
            close = self._string_end(data, 0)
            if close is None:
                self._pause_in_string(data, 0)
                return None
            pos = close
        while True:
            match = _STRUCTURE.search(data, pos)
            stop = len(data) if match is None else match.start()
            keep = self._squeeze(data, keep, pos, stop)
            if self.gap is not None:
                self.gap = (self.gap + data[pos:stop].translate(None, WHITESPACE))[:2]
            if match is None:
                self._keep(data[keep:])
                return None
            char = data[stop]
            if self.gap is not None and self._opens_events(char):
                self._keep(data[keep : stop + 1])
                return data[stop + 1 :]
            if char == _QUOTE:
                self.string_at, self.string_bytes = base + stop, 0
                close = self._string_end(data, stop + 1)
                if close is None:
                    self._keep(data[keep:stop])
                    if len(data) - stop < _SHORT_STRING:  # carried whole: keys match whole
                        self.string_at, self.carry = None, data[stop:]
                        return None
                    self._pause_in_string(data, stop)
                    return None
                if self.until is Until.EVENTS_START and self.depth == 1:
                    self.gap = b"" if data[stop:close] == _EVENTS_KEY else None
                pos = close
                continue
            pos = stop + 1
            self.depth += 1 if char in _OPENING else -1
            if self.depth <= 0 and self.until is not Until.END:
                self._keep(data[keep:pos])
                return data[pos:]

    def _string_end(self, data: bytes, pos: int) -> int | None:
        """Index after the closing quote of the string whose text starts at `pos`; None when
        `data` ends first (then `self.body_end` is where its scanned text ends)."""
        body = _STRING_BODY.match(data, pos)
        assert body is not None  # the pattern matches the empty string
        self.string_bytes += body.end() - pos
        if self.string_bytes > self.string_limit:
            raise self.fail(
                f"a string of more than {self.string_limit} bytes at byte {self.string_at}"
            )
        self.body_end = body.end()
        if body.end() < len(data) and data[body.end()] == _QUOTE:
            self.string_at = None
            return body.end() + 1
        return None  # at the end, or before a lone backslash there: its escape comes next

    def _pause_in_string(self, data: bytes, keep: int) -> None:
        """Keep the open string's text so far; a lone trailing backslash waits for its escape."""
        self._keep(data[keep : self.body_end])
        self.carry = data[self.body_end :]

    def _squeeze(self, data: bytes, keep: int, start: int, stop: int) -> int:
        """Keep data[keep:] up to each long whitespace run in data[start:stop], the run as one
        space; return where the kept text resumes."""
        for run in _LONG_SPACE.finditer(data, start, stop):
            self.squeezed = True
            self._keep(data[keep : run.start()])
            self._keep(b" ")
            keep = run.end()
        return keep

    def _opens_events(self, char: int) -> bool:
        """At the first string or bracket after the traceEvents key: whether it is the `[` of
        its value (False: the string was a value, not a key)."""
        gap, self.gap = self.gap, None
        if gap != _COLON:
            if gap and gap.startswith(_COLON):
                raise self.fail("not a Chrome trace (traceEvents is not a list)")
            return False
        if char != _OPEN_BRACKET:
            raise self.fail("not a Chrome trace (traceEvents is not a list)")
        self.found_events = True
        return True

    def _keep(self, text: bytes) -> None:
        if not text:
            return
        self.parts.append(text)
        self.size += len(text)
        if self.size > self.limit:
            raise self.fail(f"{self.what} is more than {self.limit} bytes (whitespace aside)")
