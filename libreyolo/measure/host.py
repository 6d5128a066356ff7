"""Host sampling: how much CPU the measured steps got, and how long their threads queued for it.

Role: around every measured iteration, read each sampled thread's schedstat (the measuring
process and its DataLoader workers) and the process's involuntary context switches; once per
window, the usable CPUs, torch's intra-op threads, the load average and hypervisor steal; at
every step's end, the host's runnable-task count (its mean is the load the window really saw).
A step costs a `pread` or two per thread on descriptors kept open for the window (see
`scripts/bench_overhead.py`: tens of microseconds with 8 workers), far below what the overhead
calibration can resolve. Where /proc has no schedstat (macOS, Windows) the sampler is inert
and says so (`Host(measurable=False)`). Must not decide what the numbers mean (analysis does).
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from libreyolo.document.model import Host
from libreyolo.measure.procfs import (
    CpuTicks,
    ThreadKey,
    ThreadTimes,
    delta,
    parse_involuntary,
    parse_proc_stat,
    parse_running,
    parse_schedstat,
    steal_frac,
)

PROC = "/proc"
READ_BYTES = 128  # one schedstat line is three integers
STAT_BYTES = 4096  # the aggregate `cpu` line opens /proc/stat
STATUS_BYTES = 8192  # a thread's /proc status, whole
REFRESH_STEPS = 16  # steps between listings of every sampled process's threads


def _open(path: str) -> int | None:
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:
        return None


def _ms(ns: int) -> float:
    return round(ns / 1e6, 4)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@dataclass(frozen=True, slots=True)
class StepHost:
    """One measured step's host numbers (None where not measurable)."""

    cpu_ms: float | None = None
    cpu_wait_ms: float | None = None
    num_involuntary_switches: int | None = None


@dataclass
class _Totals:
    cpu_ns: int = 0
    wait_ns: int = 0
    worker_cpu_ns: int = 0
    worker_wait_ns: int = 0
    switches: int = 0
    most_threads: int = 0
    num_steps: int = 0
    running: int = 0  # runnable tasks on the host, summed over the step ends that read it
    num_running: int = 0


@dataclass
class HostSampler:
    """Per-step and per-window host counters. `begin()`/`end()` bracket one measured step;
    `window()` returns the window's `Host` and closes the descriptors.

    This process's threads are read at both ends of a step. DataLoader workers run ahead of the
    steps (they prefetch), so a step boundary means nothing to them: they are read once per
    step, at its end, and each step gets their growth since the previous step's end; a
    `begin(after_sampled=False)` (the iteration before was not sampled) re-bases them first, so
    warmup and calibration iterations never count. Which threads exist is re-listed every
    `REFRESH_STEPS` steps and whenever a worker appears (a thread born in between counts from
    the next listing).
    """

    worker_pids: Callable[[], Sequence[int]] = tuple
    intra_op_threads: Callable[[], int] | None = None
    proc: str = PROC
    pid: int | None = None  # the measuring process when it is not this one (a trainer probe)
    _own_fds: dict[ThreadKey, int] = field(default_factory=dict)  # this process's threads
    _worker_fds: dict[ThreadKey, int] = field(default_factory=dict)
    _last: dict[ThreadKey, ThreadTimes] = field(default_factory=dict)
    _listed: set[int] = field(default_factory=set)
    _switches: int = 0
    _workers: tuple[int, ...] = ()
    _ticks: CpuTicks | None = None
    _totals: _Totals = field(default_factory=_Totals)
    _num_begins: int = 0

    def __post_init__(self) -> None:
        self._pid = os.getpid() if self.pid is None else self.pid
        self.measurable = os.path.isfile(f"{self.proc}/{self._pid}/task/{self._pid}/schedstat")
        self._loadavg: int | None = None  # descriptor of /proc/loadavg

    def begin(self, *, after_sampled: bool = False) -> None:
        """The start of one measured step: read this process's threads (and, after a gap, the
        workers' to re-base them)."""
        if not self.measurable:
            return
        if self._num_begins == 0:
            self._ticks = self._read_ticks()
            self._loadavg = _open(f"{self.proc}/loadavg")
        workers = tuple(self.worker_pids())
        relist = self._num_begins % REFRESH_STEPS == 0
        self._num_begins += 1
        if relist or workers != self._workers:
            self._workers = workers
            self._open_threads(relist)
        self._last.update(self._read(own=True))
        if not after_sampled:
            self._last.update(self._read(own=False))
        self._switches = self._involuntary_switches()

    def end(self) -> StepHost:
        """The counters' growth over the step, also added to the window's totals."""
        if not self.measurable:
            return StepHost()
        switches = self._involuntary_switches() - self._switches
        own, workers = self._read(own=True), self._read(own=False)
        own_grown, worker_grown = delta(self._last, own), delta(self._last, workers)
        self._last = own | workers
        cpu_ns = own_grown.on_cpu_ns + worker_grown.on_cpu_ns
        wait_ns = own_grown.wait_ns + worker_grown.wait_ns
        totals = self._totals
        totals.cpu_ns += cpu_ns
        totals.wait_ns += wait_ns
        totals.worker_cpu_ns += worker_grown.on_cpu_ns
        totals.worker_wait_ns += worker_grown.wait_ns
        totals.switches += switches
        totals.most_threads = max(
            totals.most_threads, own_grown.num_threads + worker_grown.num_threads
        )
        totals.num_steps += 1
        running = self._read_running()
        if running is not None:
            totals.running += running
            totals.num_running += 1
        return StepHost(_ms(cpu_ns), _ms(wait_ns), switches)

    def window(self) -> Host:
        """The window's Host record; closes every descriptor (the sampler is done)."""
        self._close()
        if not self.measurable:
            return Host(measurable=False)
        t = self._totals
        steal = steal_frac(self._ticks, self._read_ticks()) if t.num_steps else None
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        return Host(
            measurable=True,
            usable_cpus=usable_cpus(),
            intra_op_threads=self.intra_op_threads() if self.intra_op_threads else None,
            num_workers=len(self._workers),
            num_threads_sampled=t.most_threads,
            load_avg_1m=None if load is None else round(load, 2),
            runnable_avg=round(t.running / t.num_running, 2) if t.num_running else None,
            steal_frac=None if steal is None else round(steal, 4),
            cpu_ms=_ms(t.cpu_ns),
            cpu_wait_ms=_ms(t.wait_ns),
            worker_cpu_ms=_ms(t.worker_cpu_ns),
            worker_cpu_wait_ms=_ms(t.worker_wait_ns),
            num_involuntary_switches=t.switches,
        )

    def _open_threads(self, relist: bool) -> None:
        """Descriptors for threads not seen before (kept open: a pread per step is cheap),
        listing every pid when `relist`, else only pids never listed."""
        for pid in (self._pid, *self._workers):
            if pid in self._listed and not relist:
                continue
            self._listed.add(pid)
            try:
                tids = os.listdir(f"{self.proc}/{pid}/task")
            except OSError:  # a worker that exited
                continue
            fds = self._own_fds if pid == self._pid else self._worker_fds
            for name in tids:
                key = (pid, int(name))
                if key not in fds:
                    fd = _open(f"{self.proc}/{pid}/task/{name}/schedstat")
                    if fd is not None:  # None: the thread exited between listdir and open
                        fds[key] = fd
        gone = [key for key in self._worker_fds if key[0] not in self._workers]
        for key in gone:  # a loader that restarted its workers: the old ones are not ours
            os.close(self._worker_fds.pop(key))

    def _read(self, *, own: bool) -> dict[ThreadKey, ThreadTimes]:
        """The counters of this process's threads (`own`) or of the workers' threads; a
        thread that has exited (ESRCH) loses its descriptor."""
        times: dict[ThreadKey, ThreadTimes] = {}
        fds = self._own_fds if own else self._worker_fds
        for key, fd in list(fds.items()):
            try:
                parsed = parse_schedstat(os.pread(fd, READ_BYTES, 0))
            except OSError:
                parsed = None
            if parsed is None:
                os.close(fds.pop(key))
                continue
            times[key] = parsed
        return times

    def _involuntary_switches(self) -> int:
        """The measuring process's involuntary context switches: getrusage for this one, the
        sum over its threads' /proc status for another."""
        if self._pid == os.getpid():
            return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw
        total = 0
        for pid, tid in list(self._own_fds):
            path = f"{self.proc}/{pid}/task/{tid}/status"
            with contextlib.suppress(OSError), open(path, "rb") as status:
                total += parse_involuntary(status.read(STATUS_BYTES).decode("ascii", "replace"))
        return total

    def _read_running(self) -> int | None:
        if self._loadavg is None:
            return None
        try:
            return parse_running(os.pread(self._loadavg, READ_BYTES, 0).decode("ascii", "replace"))
        except OSError:
            return None

    def _read_ticks(self) -> CpuTicks | None:
        try:
            with open(f"{self.proc}/stat", "rb") as f:
                return parse_proc_stat(f.read(STAT_BYTES).decode("ascii", "replace"))
        except OSError:
            return None

    def _close(self) -> None:
        for fds in (self._own_fds, self._worker_fds):
            for fd in fds.values():
                os.close(fd)
            fds.clear()
        if self._loadavg is not None:
            os.close(self._loadavg)
            self._loadavg = None
