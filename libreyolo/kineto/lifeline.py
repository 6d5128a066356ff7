"""Forked readers end with the reader that forked them, even when it is killed outright.

Role: a reader killed by SIGKILL (or the OOM killer) runs no cleanup: its forked children (the
second half's reader, halves.py; the pool's workers, workers.py) would read on, or wait on the
pool's queue, for ever. Linux sends a child a signal when its parent dies once the child asks
(prctl PR_SET_PDEATHSIG); the request is made in the child right after the fork, then checked
against a parent that died before it was made. The kernel's "parent" is the thread that forked:
the signal comes when that thread exits, and while another thread of the process is still ending
`getppid()` names the same process, so `parent_leaving` also reads the process's own state.
Must not: print, or import torch/numpy.
"""

from __future__ import annotations

import os
import signal

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_PF_EXITING = 0x4  # <linux/sched.h>: set on a thread as its exit begins


def die_with_parent(signum: int, parent_pid: int) -> None:
    """In a child `parent_pid` just forked (Linux): receive `signum` when that process dies.

    Raises:
        OSError: the kernel refused the request.
    """
    import ctypes  # here: only forked children pay for it

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signum)) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    if os.getppid() != parent_pid:  # it died between the fork and the request: no signal comes
        signal.raise_signal(signum)


def parent_leaving(parent_pid: int) -> bool:
    """In a child of `parent_pid`: whether that process is gone or ending (it is no longer our
    parent, or its main thread has begun to exit: a killed process's threads end one by one)."""
    if os.getppid() != parent_pid:
        return True
    try:
        with open(f"/proc/{parent_pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return True
    state, flags = fields[0], int(fields[6])
    return state in (b"Z", b"X") or bool(flags & _PF_EXITING)
