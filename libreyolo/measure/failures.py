"""What a failed measurement says: exhausted memory, a full disk or an unusable output folder
become one line naming what to change, with the exit status its error class carries (3 for a
measurement that ran out of memory or disk, 2 for a destination the user must change).

Used by stages.py (inside a named stage), artifacts.py (the output folder) and from_config.py
(anything a measurement raises outside a stage). Must not catch what it does not recognise:
an unexpected error stays a bug (exit 1 with --debug's traceback).
"""

from __future__ import annotations

import contextlib
import errno
import re
from collections.abc import Iterator
from pathlib import Path

from libreyolo.errors import (
    DestinationError,
    DiskFullError,
    OutOfMemoryError,
    ProfileError,
)

MEMORY_HINT = "lower --batch or --imgsz"
SPACE_HINT = "free space or choose another --project"
DESTINATION_HINT = "choose another --project"
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
# torch's allocation failures are RuntimeErrors: CUDA's OutOfMemoryError subclass, and the CPU
# allocator's "DefaultCPUAllocator: can't allocate memory".
_OOM_TEXT = re.compile(r"out of memory|can't allocate memory|not enough memory", re.IGNORECASE)
_REASONS = {
    errno.ENOTDIR: "a part of it is a file, not a folder",
    errno.EEXIST: "it is a file, not a folder",
    errno.ENAMETOOLONG: "a name in it is too long",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
}


def is_out_of_memory(err: BaseException) -> bool:
    if isinstance(err, MemoryError) or type(err).__name__ == "OutOfMemoryError":
        return True
    return isinstance(err, RuntimeError) and _OOM_TEXT.search(str(err)) is not None


def disk_full(path: str | Path | None) -> DiskFullError:
    return DiskFullError(f"disk full writing {path or 'the profile'}", hint=SPACE_HINT)


def resource_failure(err: BaseException, stage: str | None) -> ProfileError | None:
    """The one-line error for memory or disk exhaustion during `stage`; None for anything else."""
    if is_out_of_memory(err):
        where = f" in stage '{stage}'" if stage else ""
        return OutOfMemoryError(f"out of memory{where}", hint=MEMORY_HINT)
    if isinstance(err, OSError) and err.errno in NO_SPACE:
        return disk_full(err.filename)
    return None


@contextlib.contextmanager
def resource_failures() -> Iterator[None]:
    """Memory or disk exhaustion anywhere in the block as its one-line error (exit 3)."""
    try:
        yield
    except ProfileError:
        raise
    except (MemoryError, OSError, RuntimeError) as err:
        mapped = resource_failure(err, None)
        if mapped is None:
            raise
        raise mapped from err


def destination_error(err: OSError, path: Path) -> ProfileError:
    """An OSError from creating, locking or replacing output folder `path`, as the user's
    error: disk full (exit 3), or a destination to change (exit 2)."""
    if err.errno in NO_SPACE:
        return disk_full(path)
    reason = _REASONS.get(err.errno or 0, err.strerror or type(err).__name__)
    return DestinationError(f"cannot write {path}: {reason}", hint=DESTINATION_HINT)
