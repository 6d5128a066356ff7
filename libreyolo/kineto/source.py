"""Trace bytes: open `.json`/`.json.gz`, read in chunks, and handle what surrounds the events.

Role: the file side of reading a trace. `Source` reads the (decompressed) stream chunk by chunk
and turns every way a file can be unusable into one `AnalysisError` line; `split_head` finds where
the event array starts (a bare list, or the top-level `"traceEvents": [`); `decode_meta` decodes
the keys around the array (`deviceProperties`, `displayTimeUnit`), which may come before or after
it; `last_boundary` and `as_array` find and wrap runs of events. Must not: decode events, print,
or import torch/numpy.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar

import msgspec

from libreyolo.errors import AnalysisError, MissingFileError

# Big enough that the per-call cost of the decoder vanishes, small enough that one chunk, its
# decoded structs and the copy handed to the decoder stay a few tens of MB.
CHUNK_BYTES = 8 << 20
# A JSON string (possibly cut by the buffer end) or a bracket: enough to track nesting exactly.
TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[][{}]', re.S)
WHITESPACE = b" \t\r\n"

_BOUNDARY = re.compile(rb"}\s*,\s*{")
_TAIL_WINDOW = 1 << 16  # bytes searched backwards for the last event boundary, widened as needed
_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"
_QUOTE, _OPEN_BRACE, _OPEN_BRACKET = ord('"'), ord("{"), ord("[")
_COLON = re.compile(rb"\s*(:?)\s*")
M = TypeVar("M")


class _Stream(Protocol):
    def read(self, size: int, /) -> bytes: ...


class Source:
    """A binary stream read in chunks, counting the bytes handed out (for error messages)."""

    def __init__(self, stream: _Stream, label: str, fileno: int | None = None) -> None:
        self.stream = stream
        self.label = label
        self.fileno = fileno  # plain files: offsets in the stream are offsets in this file
        self.size = os.fstat(fileno).st_size if fileno is not None else None
        self.chunk = CHUNK_BYTES  # read when opened, so tests can shrink it
        self.offset = 0
        self.eof = False

    def large_from_here(self, threshold: int) -> bool:
        """Whether at least `threshold` bytes are left (gzip: whether that many were read)."""
        if self.eof:
            return False
        if self.size is None:
            return self.offset >= threshold
        return self.size - self.offset >= threshold

    def read(self, size: int | None = None) -> bytes:
        """The next `size` bytes (default: one chunk); b"" at the end."""
        try:
            data = self.stream.read(size or self.chunk)
        except EOFError as exc:
            raise self.fail(f"truncated gzip data at byte {self.offset}") from exc
        except (OSError, zlib.error) as exc:
            raise self.fail(f"unreadable gzip data ({exc})") from exc
        self.eof = not data
        self.offset += len(data)
        return data

    def read_rest(self) -> bytes:
        parts = []
        while data := self.read():
            parts.append(data)
        return b"".join(parts)

    def fail(self, reason: str) -> AnalysisError:
        return AnalysisError(
            f"failed to analyse {self.label}: {reason}",
            hint="pass a Chrome trace written by torch.profiler (.json or .json.gz)",
        )

    def json_error(self, exc: msgspec.DecodeError, base: int | None) -> AnalysisError:
        """A one-line failure for a decoder error on text that starts at file byte `base`
        (None: no position)."""
        text = str(exc)
        if isinstance(exc, msgspec.ValidationError):
            return self.fail(f"not a Chrome trace (unexpected value: {text.split(' - at ')[0]})")
        if "truncated" in text:
            return self.fail(f"truncated JSON at byte {self.offset}")
        where = re.search(r"\(byte (\d+)\)", text)
        at = f" at byte {base + int(where.group(1))}" if where and base is not None else ""
        detail = text.split(" (byte")[0].removeprefix("JSON is malformed: ")
        return self.fail(f"invalid JSON{at}: {detail}")


@contextmanager
def open_source(path: str | os.PathLike[str]) -> Iterator[Source]:
    """Open a trace file, gzip or plain (told by its first bytes, not its name)."""
    label = os.fspath(path)
    if not os.path.isfile(label):
        raise MissingFileError(f"not found: {label}")
    with open(label, "rb") as raw:
        if raw.peek(2)[:2] == _GZIP_MAGIC:
            yield Source(gzip.GzipFile(fileobj=raw), label)
        else:
            yield Source(raw, label, raw.fileno())


def split_head(source: Source) -> tuple[bytes | None, bytes]:
    """(the object's text up to and including the event array's `[`, None for a bare list;
    the bytes read after that `[`)."""
    buf = source.read()
    buf = buf[_skip(buf, 0) :]
    buf = buf[_skip(buf, len(_BOM)) :] if buf.startswith(_BOM) else buf
    if not buf:
        raise source.fail("the file is empty")
    if buf[0] == _OPEN_BRACKET:
        return None, buf[1:]
    if buf[0] != _OPEN_BRACE:
        raise _diagnose(source, buf, "not a Chrome trace (neither an object nor a list)")
    while (start := _events_start(source, buf)) is None and not source.eof:
        buf += source.read(max(source.chunk, len(buf)))  # a long header: read on
    if start is None or start < 0:
        raise _diagnose(source, buf, "not a Chrome trace (no traceEvents)")
    return buf[:start], buf[start:]


def _skip(buf: bytes, position: int) -> int:
    """Index of the first non-whitespace byte from `position` (lstrip would copy buf)."""
    while position < len(buf) and buf[position] in WHITESPACE:
        position += 1
    return position


def _events_start(source: Source, buf: bytes) -> int | None:
    """Index after `"traceEvents": [` at the top level; -1 if the object ends without it;
    None if the buffer ends first."""
    depth = 0
    for match in TOKEN.finditer(buf):
        token = match.group()
        if token[0] != _QUOTE:
            depth += 1 if token in b"{[" else -1
            if depth == 0:
                return -1
            continue
        if match.end() == len(buf):
            return None
        if depth == 1 and token == b'"traceEvents"':
            colon = _COLON.match(buf, match.end())
            assert colon is not None  # the pattern matches the empty string
            if colon.end() == len(buf):
                return None
            if colon.group(1):  # a key, not a value that reads "traceEvents"
                if buf[colon.end()] != _OPEN_BRACKET:
                    raise source.fail("not a Chrome trace (traceEvents is not a list)")
                return colon.end() + 1
    return None


def _diagnose(source: Source, buf: bytes, reason: str) -> AnalysisError:
    """The JSON error when the start of the file is not JSON, else `reason`."""
    if len(buf) < source.chunk:  # small enough to judge whole
        buf += source.read_rest()
    try:
        msgspec.json.decode(buf)
    except msgspec.DecodeError as exc:
        return source.json_error(exc, base=0)
    return source.fail(reason)


def decode_meta(source: Source, head: bytes | None, tail: bytes, meta_type: type[M]) -> M:
    """Decode the top-level keys around the event array; a bare list has none."""
    if head is None:
        if tail.strip(WHITESPACE):
            raise source.fail("invalid JSON: extra data after the event list")
        return meta_type()
    text = head + b"]" + tail
    try:
        return msgspec.json.decode(text, type=meta_type, strict=False)
    except msgspec.ValidationError:
        return meta_type()  # odd metadata (e.g. deviceProperties of another shape): ignore it
    except msgspec.DecodeError as exc:
        raise source.json_error(exc, base=None) from exc


def last_boundary(buf: bytes) -> re.Match[bytes] | None:
    """The last `}, {` in buf (a candidate cut between two events), searched in a growing
    window at its end."""
    window = _TAIL_WINDOW
    while True:
        low = max(0, len(buf) - window)
        last = None
        for last in _BOUNDARY.finditer(buf, low):  # noqa: B007 - keep the last match
            pass
        if last is not None or low == 0:
            return last
        window *= 8


def as_array(buf: bytes, end: int) -> bytes:
    """The events in buf[:end] as the text of one JSON array (a single copy)."""
    return b"".join((b"[", memoryview(buf)[:end], b"]"))
