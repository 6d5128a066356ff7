"""Two file-system primitives of a commit: swap two paths in one rename, and lock a folder.

`exchange` is Linux's renameat2(RENAME_EXCHANGE) (kernel 3.15+, glibc 2.28+; ext4, xfs,
btrfs, tmpfs, overlayfs): both paths exist before and after, only their contents trade places,
so no reader ever finds either one missing. Elsewhere (other systems, NFS) it answers False and
the caller falls back to two renames. `folder_lock` is an flock on the folder itself, so a
lock leaves no file behind; it is released when its descriptor closes, a killed process too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: no flock; commits run unlocked there
    fcntl = None  # type: ignore[assignment]

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP})
POLL_S = 0.02


@cache
def _renameat2() -> Any:
    if sys.platform != "linux":
        return None
    import ctypes

    try:
        call = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # a libc without it (glibc < 2.28)
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


def exchange(a: Path, b: Path) -> bool:
    """Swap existing paths `a` and `b` atomically; False where the system cannot (nothing
    changed then), OSError for a real failure."""
    call = _renameat2()
    if call is None:
        return False
    import ctypes

    if call(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), str(b))


def try_lock(fd: int) -> bool | None:
    """Take an exclusive flock on `fd` without waiting: True when taken, False when another
    holder has it, None where the system or file system has no flock."""
    if fcntl is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


@contextlib.contextmanager
def folder_lock(folder: Path, timeout_s: float) -> Iterator[bool]:
    """Hold an exclusive flock on `folder` for the block; yields False if not had in time
    (True, unlocked, where there is no flock: nothing to coordinate with)."""
    if fcntl is None:
        yield True
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        deadline = time.monotonic() + timeout_s
        while not (held := try_lock(fd) is not False) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        yield held
    finally:
        os.close(fd)  # releases the lock
