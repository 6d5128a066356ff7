"""Decode the runs of a large trace in worker processes, merging their parts in file order.

Role: the parallel half of reading (chunks.py is the sequential half). Runs are cut at the last
`}, {` of each chunk without proof; a worker proves its cut by decoding it, and a run that fails
sends it and every later run back to the sequential cutter. Workers are forked (Linux) and read
their run straight from a plain file; each part comes back through a spool file, so a worker never
waits on a pipe for this busy process to read its result. This process decodes runs itself while
the workers are busy. The workers die with this process (lifeline.py); the spool folder is this
process's to remove, the workers' when it was killed outright, and the next pool's when all of
them were (its name holds this process's id). Must not: interpret events, print, or import
torch/numpy.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import shutil
import signal
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from libreyolo.kineto.lifeline import die_with_parent, parent_leaving
from libreyolo.kineto.source import ByteSource, as_array, last_boundary
from libreyolo.pids import pid_alive

if TYPE_CHECKING:  # the pool's modules load only when a trace is large enough to need them
    from concurrent.futures import Future
    from types import FrameType

MAX_WORKERS = 8  # beyond this the single-process reduction dominates anyway
# With 512 KiB chunks one process reads a 62 MB trace in 0.47 s on two CPUs, a pool of two in
# 0.55 s (forking, pickling parts, merging): the pool pays only with CPUs to spare. Two CPUs
# read a plain trace in two halves instead (halves.py), one shipment for the whole second half.
MIN_CPUS_FOR_POOL = 3
_QUEUED_PER_WORKER = 2  # runs waiting per worker: keeps it busy without hoarding the file
_MAX_PENDING = 8  # runs decoded or queued but not merged yet: bounds memory
_SHM = Path("/dev/shm")  # spool in memory where the system has it
_SPOOL_PREFIX = "libreyolo-spool-"  # then the reader's pid and a dash
_SPOOL_NAME = re.compile(rf"{_SPOOL_PREFIX}(\d+)-")

Work = Callable[[bytes], Any]  # JSON array text -> part, None when the text does not decode


def default_workers() -> int:
    """Processes reading a large trace, this one included: the usable CPUs on Linux (up to
    MAX_WORKERS; 2 means two halves, MIN_CPUS_FOR_POOL or more a pool), else 1."""
    if sys.platform != "linux" or threading.active_count() > 1:
        return 1  # fork is only safe on Linux, and only while this process has one thread
    return min(len(os.sched_getaffinity(0)), MAX_WORKERS)


def decode_in_workers(
    source: ByteSource, buf: bytes, work: Work, merge: Callable[[Any], None], workers: int
) -> bytes:
    """Decode runs with `workers` processes (this one included) up to the end of the file and
    merge their parts in order; return the bytes left for the sequential cutter (the last
    chunk, a chunk with no cut in it and what follows, or everything from the first run that
    did not decode)."""
    import multiprocessing  # here: these imports cost readers of small traces ~15 ms
    from concurrent.futures import ProcessPoolExecutor

    spool_root = str(_SHM) if _SHM.is_dir() else tempfile.gettempdir()
    _remove_stale_spools(spool_root)
    context = multiprocessing.get_context("fork")
    reader = os.getpid()
    with tempfile.TemporaryDirectory(prefix=f"{_SPOOL_PREFIX}{reader}-", dir=spool_root) as spool:
        pool = ProcessPoolExecutor(
            workers - 1, mp_context=context, initializer=_bind_to_reader, initargs=(spool, reader)
        )
        try:
            return _Dispatcher(source, work, merge, pool, spool, workers - 1).run(buf)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _remove_stale_spools(root: str) -> None:
    """Remove this user's spool folders whose reader is gone: it was killed together with its
    workers, so nobody was left to remove them (a folder of a live reader is left alone)."""
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            found = _SPOOL_NAME.match(entry.name)
            if found is None or pid_alive(int(found.group(1))):
                continue
            with contextlib.suppress(OSError):  # removed meanwhile, by another reader
                if entry.is_dir(follow_symlinks=False) and entry.stat().st_uid == os.getuid():
                    shutil.rmtree(entry.path, ignore_errors=True)


def _bind_to_reader(spool: str, reader: int) -> None:
    """In a worker, first: end when the reader (pid `reader`) dies; when it was killed outright
    (it is gone or ending), remove the spool folder its own cleanup would have. A live reader
    that ends a worker (a broken pool) removes the folder itself, after its other workers."""

    def leave(signum: int, frame: FrameType | None) -> None:
        if parent_leaving(reader):
            shutil.rmtree(spool, ignore_errors=True)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, leave)
    try:
        die_with_parent(signal.SIGTERM, reader)
    except OSError:  # it could outlive the reader: it leaves, and the reader decodes its runs
        os._exit(1)


class _Dispatcher:
    """Cuts runs off the stream and hands each to a worker, or decodes it here."""

    def __init__(
        self, source: ByteSource, work: Work, merge: Callable[[Any], None], pool: Any, spool: str,
        helpers: int,
    ) -> None:  # fmt: skip
        self.source, self.work, self.merge = source, work, merge
        self.pool, self.spool, self.helpers = pool, spool, helpers
        self.pending: deque[tuple[_Result, Callable[[], bytes]]] = deque()

    def run(self, buf: bytes) -> bytes:
        while not self.source.eof:
            if len(buf) < self.source.chunk:
                buf += self.source.read()
                continue
            boundary = last_boundary(buf)
            if boundary is None:
                break  # no cut in a whole chunk (padding, a long event): the cutter goes on
            self.pending.append(self._start(buf, boundary.start() + 1, boundary.end() - 1))
            buf = buf[boundary.end() - 1 :]
            while self.pending and (len(self.pending) > _MAX_PENDING or self.pending[0][0].ready()):
                if (failed := self._collect()) is not None:
                    return failed + buf
        while self.pending:
            if (failed := self._collect()) is not None:
                return failed + buf
        return buf

    def _start(self, buf: bytes, end: int, after: int) -> tuple[_Result, Callable[[], bytes]]:
        """Start decoding the run buf[:end] (a worker if one has room, else here), and keep a
        way to get buf[:after] (the run and its comma) back."""
        offset = self.source.offset - len(buf)  # file offset of buf[0]
        fileno = self.source.fileno
        queued = sum(not result.ready() for result, _ in self.pending)
        result: _Result
        if queued < self.helpers * _QUEUED_PER_WORKER:
            task = (fileno, offset, end) if fileno is not None else as_array(buf, end)
            job = (self.work, task, f"{self.spool}/{offset}")
            result = _Spooled(self.pool.submit(_in_worker, *job))
        else:
            result = _Done(self.work(as_array(buf, end)))
        if fileno is None:
            return result, memoryview(buf)[:after].tobytes
        return result, lambda: os.pread(fileno, after, offset)  # re-read: no chunk kept

    def _collect(self) -> bytes | None:
        """Merge the oldest run's part; if it did not decode, return it and every later run."""
        result, text = self.pending.popleft()
        part = result.get()
        if part is not None:
            self.merge(part)
            return None
        failed = b"".join([text(), *(later() for _, later in self.pending)])
        self.pending.clear()  # later parts may rest on a false cut: redo them all
        return failed


class _Result(Protocol):
    """A run's outcome, ready or not."""

    def ready(self) -> bool: ...

    def get(self) -> Any: ...


class _Done:
    """A run decoded in this process, queued in order with the workers' results."""

    def __init__(self, part: Any) -> None:
        self.part = part

    def ready(self) -> bool:
        return True

    def get(self) -> Any:
        return self.part


class _Spooled:
    """A worker's run: its part waits in a spool file (None: it did not decode, the worker
    died, e.g. killed for memory, or the spool was full; the run is then redone here)."""

    def __init__(self, future: Future[str | None]) -> None:
        self.future = future

    def ready(self) -> bool:
        return self.future.done()

    def get(self) -> Any:
        from concurrent.futures.process import BrokenProcessPool  # loaded with the pool

        try:
            spooled = self.future.result()
        except (BrokenProcessPool, OSError):  # a dead worker, or a full spool: redo it here
            return None
        if spooled is None:
            return None
        path = Path(spooled)
        part = pickle.loads(path.read_bytes())
        path.unlink()
        return part


def _in_worker(work: Work, task: bytes | tuple[int, int, int], spool: str) -> str | None:
    """In a worker: decode a run (its text, or (fd, offset, length) in the plain file) and
    spool the part; return the spool file, or None when the run does not decode."""
    if isinstance(task, tuple):
        fileno, offset, length = task
        task = b"".join((b"[", os.pread(fileno, length, offset), b"]"))
    part = work(task)
    if part is None:
        return None
    Path(spool).write_bytes(pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL))
    return spool
