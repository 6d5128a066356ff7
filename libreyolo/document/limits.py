"""What a reader accepts: regular files only, and documented caps on what it reads.

Role: the one place the readers' limits live, so `profile.json`, `.gz` files, stdin and Chrome
traces refuse the same way. A path must name a regular file (a device, FIFO, socket or folder is
refused from its `stat`, before any read, so `/dev/zero` cannot fill memory and a FIFO cannot
block). Decompressed input stops at `MAX_INPUT_BYTES` (`--max-input-bytes`). Must not: import
anything beyond the standard library.
"""

from __future__ import annotations

import os
import re
import stat
from typing import BinaryIO

from libreyolo.errors import AnalysisError, MissingFileError

# Bytes a reader takes from one input once decompressed: 250x the largest real trace in the
# fixtures (15 MB), and what the analyser's budget (0.6 x file + 150 MB, ~2.7 GB here) still fits
# in a laptop's memory. `--max-input-bytes` raises or lowers it.
MAX_INPUT_BYTES = 4 << 30
# A profile.json is kilobytes (a 1.6.0 one with every table: ~200 kB); past this it is no profile.
MAX_PROFILE_BYTES = 64 << 20
# One JSON string in a trace: a kernel name is under 10 kB; past this the string is refused.
MAX_STRING_BYTES = 16 << 20
# One trace event, and the keys around the event array, with their whitespace squeezed out.
MAX_EVENT_BYTES = 64 << 20
# A sweep's small files: point.json, status.json, sweep_plan.json (a request is ~2 kB).
MAX_SMALL_BYTES = 1 << 20
# A sweep.json: ~1 kB a point, so a grid of 10**5 points still reads.
MAX_RECORD_BYTES = 256 << 20
LIMIT_FLAG = "--max-input-bytes"

_SIZE = re.compile(r"(\d+)\s*([KMGT]?)(i?B)?", re.IGNORECASE)
_SUFFIX_SHIFT = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def parse_size(text: str) -> int:
    """Bytes from `123`, `512K`, `64M`, `8G` or `1T` (binary units; `MiB`/`MB` read alike).

    Raises:
        ValueError: not a whole number of bytes, or zero.
    """
    match = _SIZE.fullmatch(text.strip())
    if match is None or int(match.group(1)) == 0:
        raise ValueError(f"must be a positive size in bytes (e.g. 512M, 8G), got {text}")
    return int(match.group(1)) << _SUFFIX_SHIFT[match.group(2).upper()]


def too_large(label: str, limit_bytes: int) -> AnalysisError:
    """The failure for an input that goes past the input limit (exit 1)."""
    return AnalysisError(
        f"failed to analyse {label}: exceeds the input limit of {limit_bytes} bytes",
        hint=f"raise it with {LIMIT_FLAG}",
    )


def check_regular(path: str) -> os.stat_result:
    """The `stat` of `path`, or MissingFileError (exit 2) when it is absent or no regular file.

    Only `stat` runs: nothing is opened, so a FIFO cannot block and a device is never read.
    """
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise MissingFileError(f"not found: {path}") from None
    except OSError as err:
        raise MissingFileError(f"cannot read {path}: {err.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise MissingFileError(
            f"not a file: {path} is a directory", hint="pass profile.json or profile_trace.json"
        )
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a plain file")
        raise MissingFileError(
            f"not a regular file: {path} ({kind})", hint="pass profile.json or profile_trace.json"
        )
    return info


def open_regular(path: str, limit_bytes: int) -> BinaryIO:
    """`path` opened for binary reading, once `check_regular` passed and its size is within
    `limit_bytes` (refused by size before a byte is read). The open does not block even if a
    FIFO took the file's place since the check; the descriptor's own `fstat` refuses it."""
    info = check_regular(path)
    if info.st_size > limit_bytes:
        raise too_large(path, limit_bytes)
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | os.O_CLOEXEC)
    except OSError as err:
        raise AnalysisError(f"failed to analyse {path}: {err.strerror}") from None
    if not stat.S_ISREG(os.fstat(handle).st_mode):
        os.close(handle)
        raise MissingFileError(f"not a regular file: {path}")
    os.set_blocking(handle, True)
    return os.fdopen(handle, "rb")
