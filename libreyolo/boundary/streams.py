"""The process's standard streams as `Output` uses them when they are closed or full.

stderr carries messages for people: losing one must never change a result or a status, so
its writes are best effort. stdout carries the result: a write that fails is the command's
failure (`ResultNotShownError`, raised by the CLI), never a traceback or a silent exit 1.
Must not: decide an exit status or write anything itself.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from typing import TextIO, cast


class BestEffortStream(io.TextIOBase):
    """A stream whose failed writes (closed, full, broken pipe) are dropped: a warning that
    cannot be shown must not stop the measurement or reader that raised it."""

    def __init__(self, stream: TextIO | None) -> None:
        super().__init__()
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is not None:
            try:
                self._stream.write(text)
            except (OSError, ValueError):
                self._stream = None  # it will not take the next line either
        return len(text)

    def flush(self) -> None:
        if self._stream is not None:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self._stream = None

    def isatty(self) -> bool:
        try:
            return self._stream is not None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:  # faulthandler and child processes write to the descriptor
        if self._stream is None:
            raise io.UnsupportedOperation("the stream is gone")
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", None) or "utf-8"


class ClosedStream(io.TextIOBase):
    """What Python leaves as None when the process started with the descriptor closed
    (`>&-`): every write fails as a write to a closed descriptor does."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "the stream was closed when the command started")

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


def best_effort(stream: TextIO | None) -> TextIO:
    """`stream` with its failures dropped; None: a stream that drops everything."""
    return cast(TextIO, BestEffortStream(stream))


def discard_stdout(stream: TextIO) -> None:
    """Point the process's stdout descriptor at /dev/null once a result could not be written,
    so the text still buffered does not fail again (a traceback) as the interpreter exits. A
    stream that is not the process's (a test's) is left alone."""
    if stream is not sys.stdout:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
