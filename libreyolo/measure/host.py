"""Host sampling: how much CPU the measured steps got, and how long their threads queued for it.

Role: around every measured iteration, read each sampled thread's schedstat (the measuring
process and its DataLoader workers) and the process's involuntary context switches; once per
window, the usable CPUs, torch's intra-op threads, the load average and hypervisor steal; at
every step's end, the host's runnable-task count (its mean is the load the window really saw).
A step costs one `listdir` of /proc/self/task plus one `pread` per thread on descriptors kept
open for the window (about 15 us for 4 threads here), far below what the overhead calibration
can resolve. Where /proc has no schedstat (macOS, Windows) the sampler is inert and says so
(`Host(measurable=False)`). Must not decide what the numbers mean (analysis does).
"""

from __future__ import annotations

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
    parse_proc_stat,
    parse_running,
    parse_schedstat,
    steal_frac,
)

PROC = "/proc"
READ_BYTES = 128  # one schedstat line is three integers
STAT_BYTES = 4096  # the aggregate `cpu` line opens /proc/stat


def _ms(ns: int) -> float:
    return round(ns / 1e6, 4)


def usable_cpus() -> int | None:
    """The CPUs this process may run on (its affinity mask), else the machine's count."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is not None:
        return len(getaffinity(0))
    return os.cpu_count()


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
    `window()` returns the window's `Host` and closes the descriptors."""

    worker_pids: Callable[[], Sequence[int]] = tuple
    intra_op_threads: Callable[[], int] | None = None
    proc: str = PROC
    _fds: dict[ThreadKey, int] = field(default_factory=dict)
    _start: dict[ThreadKey, ThreadTimes] = field(default_factory=dict)
    _switches: int = 0
    _workers: tuple[int, ...] = ()
    _ticks: CpuTicks | None = None
    _totals: _Totals = field(default_factory=_Totals)
    _started: bool = False
    _loadavg: int | None = None  # descriptor of /proc/loadavg

    def __post_init__(self) -> None:
        self._pid = os.getpid()
        self.measurable = os.path.isfile(f"{self.proc}/{self._pid}/task/{self._pid}/schedstat")

    def begin(self) -> None:
        """Read every sampled thread's counters: the start of one measured step."""
        if not self.measurable:
            return
        if not self._started:
            self._started = True
            self._ticks = self._read_ticks()
            try:
                self._loadavg = os.open(f"{self.proc}/loadavg", os.O_RDONLY)
            except OSError:
                self._loadavg = None
        self._workers = tuple(self.worker_pids())
        self._open_threads()
        self._start = self._read_threads()
        self._switches = resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw

    def end(self) -> StepHost:
        """The counters' growth since `begin()`, also added to the window's totals."""
        if not self.measurable:
            return StepHost()
        switches = resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw - self._switches
        after = self._read_threads()
        grown = delta(self._start, after)
        workers = set(self._workers)
        mine = {k: v for k, v in after.items() if k[0] in workers}
        worker_grown = delta(self._start, mine)
        totals = self._totals
        totals.cpu_ns += grown.on_cpu_ns
        totals.wait_ns += grown.wait_ns
        totals.worker_cpu_ns += worker_grown.on_cpu_ns
        totals.worker_wait_ns += worker_grown.wait_ns
        totals.switches += switches
        totals.most_threads = max(totals.most_threads, grown.num_threads)
        totals.num_steps += 1
        running = self._read_running()
        if running is not None:
            totals.running += running
            totals.num_running += 1
        return StepHost(_ms(grown.on_cpu_ns), _ms(grown.wait_ns), switches)

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

    def _open_threads(self) -> None:
        """Descriptors for threads not seen before (kept open: a pread per step is cheap)."""
        for pid in (self._pid, *self._workers):
            try:
                tids = os.listdir(f"{self.proc}/{pid}/task")
            except OSError:  # a worker that exited
                continue
            for name in tids:
                key = (pid, int(name))
                if key in self._fds:
                    continue
                try:
                    self._fds[key] = os.open(
                        f"{self.proc}/{pid}/task/{name}/schedstat", os.O_RDONLY
                    )
                except OSError:  # the thread exited between listdir and open
                    continue

    def _read_threads(self) -> dict[ThreadKey, ThreadTimes]:
        times: dict[ThreadKey, ThreadTimes] = {}
        for key, fd in list(self._fds.items()):
            try:
                parsed = parse_schedstat(os.pread(fd, READ_BYTES, 0).decode("ascii", "replace"))
            except OSError:  # ESRCH: the thread has exited; its descriptor is useless now
                parsed = None
            if parsed is None:
                os.close(self._fds.pop(key))
                continue
            times[key] = parsed
        return times

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
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        if self._loadavg is not None:
            os.close(self._loadavg)
            self._loadavg = None
