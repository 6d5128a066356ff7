"""Trace bytes: open `.json`/`.json.gz`, read in chunks, and handle what surrounds the events.

Role: the file side of reading a trace. `ByteSource` reads the (decompressed) stream chunk by chunk,
never past the input limit, and turns every way a file can be unusable into one `AnalysisError`
line; `split_head` finds where the event array starts (a bare list, or the top-level
`"traceEvents": [`); `decode_meta` decodes the keys around the array (`deviceProperties`,
`displayTimeUnit`), which may come before or after it and are kept squeezed (compact.py);
`last_boundary` and `as_array` find and wrap runs of events. Must not: decode events, print, or
import torch/numpy.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar

import msgspec

from libreyolo.document.limits import (
    MAX_EVENT_BYTES,
    MAX_INPUT_BYTES,
    MAX_STRING_BYTES,
    open_regular,
    too_large,
)
from libreyolo.errors import AnalysisError
from libreyolo.kineto.compact import WHITESPACE, Compactor, Until

# Big enough that the per-call cost of the decoder vanishes, small enough that one chunk, its
# decoded structs and the copy handed to the decoder stay in the CPU's caches and a few MB of
# memory (62 MB CPU trace, one process: 8 MiB chunks read it in 0.32 s at 97 MB peak, 512 KiB
# ones in 0.21 s at 32 MB).
CHUNK_BYTES = 512 << 10
# Worker processes pay off once a trace is large: with less than this left to read (gzip: read
# so far), this process decodes alone, as forking and shipping runs would cost more than it saves
# (a 7 MB trace: 30 ms more with a pool of two).
PARALLEL_MIN_BYTES = 24 << 20
# A JSON string (possibly cut by the buffer end) or a bracket: enough to track nesting exactly.
TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[][{}]', re.S)

BOUNDARY = re.compile(rb"}\s*,\s*{")  # a candidate cut between two events
_TAIL_WINDOW = 1 << 16  # bytes searched backwards for the last event boundary, widened as needed
_LEADING_SPACE = re.compile(rb"[ \t\r\n]*")
_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"
_OPEN_BRACE, _OPEN_BRACKET = ord("{"), ord("[")
M = TypeVar("M")


class _Stream(Protocol):
    def read(self, size: int, /) -> bytes: ...


class ByteSource:
    """A binary stream read in chunks, counting the bytes handed out (for error messages)."""

    def __init__(
        self, stream: _Stream, label: str, fileno: int | None = None, *,
        max_input_bytes: int = MAX_INPUT_BYTES,
    ) -> None:  # fmt: skip
        self.stream = stream
        self.label = label
        self.fileno = fileno  # plain files: offsets in the stream are offsets in this file
        self.size = os.fstat(fileno).st_size if fileno is not None else None
        self.max_input_bytes = max_input_bytes
        # Read when opened, so tests can shrink them.
        self.chunk = CHUNK_BYTES
        self.parallel_min = PARALLEL_MIN_BYTES
        self.string_limit = MAX_STRING_BYTES
        self.event_limit = MAX_EVENT_BYTES
        self.offset = 0
        self.eof = False

    def large_from_here(self) -> bool:
        """Whether enough is left to read for worker processes to pay off (gzip: whether that
        much was read)."""
        if self.eof:
            return False
        if self.size is None:
            return self.offset >= self.parallel_min
        return self.size - self.offset >= self.parallel_min

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
        if self.offset > self.max_input_bytes:  # a gzip bomb stops here, one chunk past
            raise too_large(self.label, self.max_input_bytes)
        return data

    def compactor(self, until: Until, what: str) -> Compactor:
        """A Compactor for this file's text, with its caps and its failure line."""
        return Compactor(
            until,
            self.fail,
            what=what,
            limit_bytes=self.event_limit,
            string_limit_bytes=self.string_limit,
        )

    def read_through(self, compactor: Compactor, buf: bytes) -> bytes | None:
        """Feed `buf` (the latest bytes read), then the next chunks, to `compactor` until its
        text ends; the bytes after that end, or None when the file ends first."""
        offset = self.offset - len(buf)
        while (rest := compactor.feed(buf, offset)) is None:
            offset = self.offset
            if not (buf := self.read()):
                return None
        return rest

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
def open_source(
    path: str | os.PathLike[str], *, max_input_bytes: int = MAX_INPUT_BYTES
) -> Iterator[ByteSource]:
    """Open a trace file, gzip or plain (told by its first bytes, not its name); a plain file
    over `max_input_bytes` is refused by its size, a gzip one once that much is inflated. A file
    that changed while the block read it fails as it closes, whatever else failed.

    Raises:
        MissingFileError: absent, or not a regular file (judged before it is opened).
        AnalysisError: over the input limit, unreadable, or changed while it was read.
    """
    label = os.fspath(path)
    with open_regular(label, max_input_bytes) as raw:
        assert isinstance(raw, io.BufferedReader)  # os.fdopen(..., "rb") makes one
        opened = os.fstat(raw.fileno())
        if raw.peek(2)[:2] == _GZIP_MAGIC:
            source = ByteSource(gzip.GzipFile(fileobj=raw), label, max_input_bytes=max_input_bytes)
        else:
            source = ByteSource(raw, label, raw.fileno(), max_input_bytes=max_input_bytes)
        try:
            yield source
        except AnalysisError:  # a file cut or rewritten under the reader often fails to parse
            _check_unchanged(label, raw.fileno(), opened)
            raise
        _check_unchanged(label, raw.fileno(), opened)


def _check_unchanged(label: str, fileno: int, opened: os.stat_result) -> None:
    """Refuse a file whose size or modification time moved since it was opened (`opened`):
    its chunks, runs or halves may come from different versions of it, a mixed result.

    Raises:
        AnalysisError: the file changed.
    """
    now = os.fstat(fileno)
    if (now.st_size, now.st_mtime_ns) == (opened.st_size, opened.st_mtime_ns):
        return
    if now.st_size != opened.st_size:
        how = f"its size went from {opened.st_size} to {now.st_size} bytes"
    else:
        how = "it was rewritten in place (same size, new modification time)"
    raise AnalysisError(
        f"failed to analyse {label}: the trace changed while it was read; {how}",
        hint="read it once whatever writes it has finished",
    )


def split_head(source: ByteSource) -> tuple[bytes | None, bytes]:
    """(the object's text up to and including the event array's `[`, squeezed, None for a bare
    list; the bytes read after that `[`)."""
    buf = _first_bytes(source)
    if not buf:
        raise source.fail("the file is empty")
    if buf[0] == _OPEN_BRACKET:
        return None, buf[1:]
    if buf[0] != _OPEN_BRACE:
        raise _diagnose(source, buf, "not a Chrome trace (neither an object nor a list)", base=0)
    head = source.compactor(Until.EVENTS_START, "the text before traceEvents")
    rest = source.read_through(head, buf)
    if rest is None or not head.found_events:
        text = head.text() + (rest or b"")
        base = None if head.squeezed else 0
        raise _diagnose(source, text, "not a Chrome trace (no traceEvents)", base=base)
    return head.text(), rest


def _first_bytes(source: ByteSource) -> bytes:
    """The first chunk, from its first byte that is not whitespace (or the BOM); whitespace
    before it is read and dropped."""
    buf = source.read()
    buf = buf[len(_BOM) :] if buf.startswith(_BOM) else buf
    while buf and skip_space(buf) == len(buf):
        buf = source.read()
    return buf[skip_space(buf) :]


def skip_space(buf: bytes) -> int:
    """Index of the first non-whitespace byte (lstrip would copy buf)."""
    match = _LEADING_SPACE.match(buf)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _diagnose(source: ByteSource, buf: bytes, reason: str, base: int | None) -> AnalysisError:
    """The JSON error when the start of the file (at byte `base` of buf, None: squeezed, no
    positions) is not JSON, else `reason`."""
    if len(buf) < source.chunk:  # small enough to judge whole
        buf += source.read()
    try:
        msgspec.json.decode(buf)
    except msgspec.DecodeError as exc:
        return source.json_error(exc, base=base)
    return source.fail(reason)


def decode_meta(source: ByteSource, head: bytes | None, tail: bytes, meta_type: type[M]) -> M:
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
        for last in BOUNDARY.finditer(buf, low):  # noqa: B007 - keep the last match
            pass
        if last is not None or low == 0:
            return last
        window *= 8


def as_array(buf: bytes, end: int) -> bytes:
    """The events in buf[:end] as the text of one JSON array (a single copy)."""
    return b"".join((b"[", memoryview(buf)[:end], b"]"))
