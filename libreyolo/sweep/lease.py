"""The per-device lease: one measurement at a time on each GPU, and on the CPU.

Role: `device_lease` holds an exclusive `flock` on `<lock_dir>/gpu<i>.lock` for a free physical
GPU among the candidates, or on `<lock_dir>/cpu.lock` for a CPU point (two CPU points measuring
at once skew each other's timings), for as long as the point measures. It polls until a
timeout, then raises `NoProfileError` naming the devices and the lock folder. The kernel drops
a lock when its holder dies, so there is no stale-lock cleanup. `Lease` says which device was
held and how to reach it: the child's `CUDA_VISIBLE_DEVICES` and torch device string.

Must not: import torch (the lease is taken before CUDA starts), keep locks in module globals
(launchers pickle the task by value with every global it touches; a lock cannot be pickled),
or delete lock files (another process may hold the same inode).
"""

from __future__ import annotations

import errno
import fcntl
import math
import os
import re
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from libreyolo.errors import NoProfileError, UsageError

LOCK_DIR_NAME = "libreyolo-gpu-locks"
POLL_S = 0.2
_DEVICE_TYPE = re.compile(r"[a-z][a-z0-9_]*")  # cpu, mps, xpu: the lock file's name


def default_lock_dir() -> Path:
    """`libreyolo-gpu-locks` under the system temp dir: shared by every process on the machine."""
    return Path(tempfile.gettempdir()) / LOCK_DIR_NAME


@dataclass(frozen=True)
class Lease:
    """A held device: its label (`gpu1`, `cpu`), physical GPU id and when it was acquired."""

    held_device: str
    gpu: str | None  # physical id as CUDA_VISIBLE_DEVICES names it; None for a CPU point
    visible_index: int  # position of `gpu` among this process's visible devices
    acquired_at: float  # epoch seconds
    wait_s: float

    def child_device(self, device: str) -> str:
        """The device a fresh child measures on: `cuda:0` once the child sees only this GPU."""
        return "cuda:0" if self.gpu is not None else device

    def child_env(self) -> dict[str, str]:
        """Environment overrides for a fresh child process: only the leased GPU visible; none
        for a CPU point, so nothing in it (a pin thread, a library probing devices) can start
        a CUDA context on a GPU another point is measuring on."""
        if self.gpu is not None:
            return {"CUDA_VISIBLE_DEVICES": self.gpu}
        return {"CUDA_VISIBLE_DEVICES": ""} if self.held_device == "cpu" else {}

    def in_process_device(self, device: str) -> str:
        """The device this process measures on: the leased GPU as this process numbers it."""
        return f"cuda:{self.visible_index}" if self.gpu is not None else device


def cuda_index(device: str) -> int | None:
    """The CUDA index a device string names (`"1"`, `"cuda:1"`, `"cuda"` -> 0); None otherwise."""
    text = device.strip().lower()
    if text.isdigit():
        return int(text)
    if text == "cuda":
        return 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    return None


def visible_gpus(environ: dict[str, str] | None = None) -> list[str] | None:
    """The physical GPU ids in CUDA_VISIBLE_DEVICES (Ray sets it per task); None when unset or
    empty (submitit_local without GPUs sets it empty; a fresh child can still be given one)."""
    value = (os.environ if environ is None else environ).get("CUDA_VISIBLE_DEVICES", "")
    ids = [part.strip() for part in value.split(",") if part.strip()]
    return ids or None


def gpu_candidates(
    device: str, gpus: Sequence[int] | None = None, environ: dict[str, str] | None = None
) -> list[str]:
    """Physical GPUs a CUDA point may lease: `gpus` (`sweep.gpus`) among the visible ones,
    else the visible ones, else its own index. UsageError when `gpus` names no visible GPU:
    measuring on another would break the launcher's assignment."""
    visible = visible_gpus(environ)
    if gpus:
        named = [str(gpu) for gpu in gpus]
        if visible is None:
            return named
        usable = [gpu for gpu in named if gpu in visible]
        if not usable:
            raise UsageError(
                f"sweep.gpus {','.join(named)} names none of the GPUs this process sees "
                f"(CUDA_VISIBLE_DEVICES={','.join(visible)})",
                hint="list visible GPUs in sweep.gpus, or leave it unset",
            )
        return usable
    if visible is not None:
        return visible
    index = cuda_index(device)
    return [str(index if index is not None else 0)]


def _int(name: str) -> int:
    return int(name) if name.isdigit() else 0


def device_label(device: str) -> str:
    """The lock name of a non-CUDA device: its type (`cpu`, `mps`); UsageError for a name that
    is no device type (it would name a lock file elsewhere: `../../x`)."""
    label = device.strip().lower().split(":", 1)[0] or "cpu"
    if not _DEVICE_TYPE.fullmatch(label):
        raise UsageError(
            f"device.name {device!r} is not a device", hint="use cpu, a CUDA index or cuda:N"
        )
    return label


def check_lease_timeout(timeout_s: float) -> None:
    """UsageError unless `timeout_s` is a finite number of seconds, 0 or more (NaN compares
    false with everything: a point would wait forever)."""
    if isinstance(timeout_s, bool) or not math.isfinite(timeout_s) or timeout_s < 0:
        raise UsageError(
            f"sweep.lease_timeout_s must be a finite number of seconds, 0 or more; got {timeout_s}"
        )


def usable_lock_dir(lock_dir: str | Path | None) -> Path:
    """The lock folder, created when missing; UsageError when it cannot be created or a lock
    file cannot be written there (a file in the way, a read-only file system, no permission)."""
    folder = Path(lock_dir) if lock_dir else default_lock_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, "Permission denied")
    except OSError as err:
        raise UsageError(
            f"cannot use the lock folder {folder}: {err.strerror or err}",
            hint="set sweep.lock_dir to a folder every measuring process can write",
        ) from None
    return folder


def _try_lock(path: Path) -> int | None:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as err:  # read-only, no permission, not a regular file
        raise UsageError(
            f"cannot open the lock file {path}: {err.strerror or err}",
            hint="set sweep.lock_dir to a folder every measuring process can write",
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


@contextmanager
def device_lease(
    device: str,
    *,
    lock_dir: str | Path | None = None,
    timeout_s: float = 3600.0,
    gpus: Sequence[int] | None = None,
    poll_s: float = POLL_S,
) -> Iterator[Lease]:
    """Hold the lease for `device` (a CUDA point: a free GPU among the candidates; otherwise
    `<type>.lock`, e.g. `cpu.lock`) while the body runs; `NoProfileError` after `timeout_s`."""
    check_lease_timeout(timeout_s)
    folder = usable_lock_dir(lock_dir)
    names: list[str | None] = [None]
    if cuda_index(device) is not None:
        names = list(gpu_candidates(device, gpus))
        labels = [f"gpu{name}" for name in names]
    else:
        labels = [device_label(device)]
    visible = visible_gpus()
    start = time.monotonic()
    while True:
        for name, label in zip(names, labels, strict=True):
            fd = _try_lock(folder / f"{label}.lock")
            if fd is None:
                continue
            index = 0 if name is None else visible.index(name) if visible else _int(name)
            try:
                yield Lease(label, name, index, time.time(), time.monotonic() - start)
            finally:
                os.close(fd)  # closing the descriptor drops the lock
            return
        if time.monotonic() - start >= timeout_s:
            raise NoProfileError(
                f"no lease on {' or '.join(labels)} within {timeout_s:g} s: another "
                f"measurement holds it (locks in {folder})",
                hint="raise sweep.lease_timeout_s, add GPUs to sweep.gpus, or wait",
            )
        time.sleep(poll_s)
