"""Linux /proc text, parsed: per-thread scheduler counters and the host's CPU time split.

Role: turn the exact text the kernel writes into numbers, and the difference of two readings
into what happened in between. Pure (no I/O), so the rules are tested on recorded text.

- `/proc/<pid>/task/<tid>/schedstat`: `on_cpu_ns run_queue_wait_ns num_timeslices`. The second
  field is the time the thread was runnable but waited for a CPU: the one number that tells a
  busy host from a slow program (Linux Documentation/scheduler/sched-stats.rst).
- `/proc/loadavg`: `1m 5m 15m running/total last_pid`; `running` is the number of tasks
  runnable on the whole host at this instant (the reader included), a load that does not lag
  by a minute as the averages do.
- `/proc/stat`, first line: `cpu user nice system idle iowait irq softirq steal guest
  guest_nice` in clock ticks; `steal` is time a hypervisor gave this VM's CPUs to others.
  guest and guest_nice are already counted in user and nice, so they are not added again.
- `/proc/<pid>/status`: `VmHWM:   123456 kB`, the resident set's high-water mark (KiB), which
  writing `5` to `/proc/<pid>/clear_refs` resets to the current RSS (Linux 4.0+,
  Documentation/filesystems/proc.rst).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

ThreadKey = tuple[int, int]  # (pid, tid): a thread of the measuring process or of a worker


class ThreadTimes(NamedTuple):
    """One thread's cumulative scheduler counters, in nanoseconds (a tuple: read per step)."""

    on_cpu_ns: int
    wait_ns: int


@dataclass(frozen=True, slots=True)
class ThreadDelta:
    """What the sampled threads did between two readings."""

    on_cpu_ns: int
    wait_ns: int
    num_threads: int  # threads seen in both readings


def parse_schedstat(raw: bytes | str) -> ThreadTimes | None:
    """The counters of one schedstat line (bytes as read, or text), or None when it is not one."""
    fields = raw.split(maxsplit=2)
    try:
        on_cpu, wait = int(fields[0]), int(fields[1])
    except (IndexError, ValueError):
        return None
    return ThreadTimes(on_cpu, wait) if on_cpu >= 0 and wait >= 0 else None


def delta(
    before: Mapping[ThreadKey, ThreadTimes], after: Mapping[ThreadKey, ThreadTimes]
) -> ThreadDelta:
    """The counters' growth over the threads present in both readings.

    A thread that exited in between is gone from `after`: its last slice is lost, never
    counted negative. One that started in between has no baseline and waits for the next
    reading. A counter that went backwards belongs to a reused tid, a new thread: skipped.
    """
    on_cpu = wait = num = 0
    for key, end in after.items():
        start = before.get(key)
        if start is None or end.on_cpu_ns < start.on_cpu_ns or end.wait_ns < start.wait_ns:
            continue
        on_cpu += end.on_cpu_ns - start.on_cpu_ns
        wait += end.wait_ns - start.wait_ns
        num += 1
    return ThreadDelta(on_cpu_ns=on_cpu, wait_ns=wait, num_threads=num)


@dataclass(frozen=True, slots=True)
class CpuTicks:
    """The host's CPU time so far, all CPUs together, in clock ticks."""

    total: int
    steal: int


def parse_proc_stat(text: str) -> CpuTicks | None:
    """The aggregate `cpu` line of /proc/stat, or None when it is missing or short (kernels
    before 2.6.11 had no steal field)."""
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0] != "cpu":
            continue
        numbers = fields[1:9]  # user .. steal; guest time is inside user/nice already
        if len(numbers) < 8 or not all(f.isdigit() for f in numbers):
            return None
        ticks = [int(f) for f in numbers]
        return CpuTicks(total=sum(ticks), steal=ticks[7])
    return None


def steal_frac(before: CpuTicks | None, after: CpuTicks | None) -> float | None:
    """Steal over all CPU time between the readings; None when either is missing or no tick
    passed (the window was shorter than one tick)."""
    if before is None or after is None:
        return None
    total = after.total - before.total
    if total <= 0:
        return None
    return max(after.steal - before.steal, 0) / total


def parse_running(text: str) -> int | None:
    """The instantaneous runnable-task count of a /proc/loadavg line, or None."""
    fields = text.split()
    if len(fields) < 4:
        return None
    running = fields[3].partition("/")[0]
    return int(running) if running.isdigit() else None


def kib_field(text: str, key: str) -> int | None:
    """`key:   123456 kB` of /proc's `key: value` text (status, meminfo), in bytes; None when
    absent or unreadable."""
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name == key:
            fields = rest.split()
            if fields and fields[0].isdigit():
                return int(fields[0]) * 1024  # the kernel writes kB (KiB)
            return None
    return None


def parse_vm_hwm(text: str) -> int | None:
    """The VmHWM (peak RSS) of /proc/<pid>/status text, in bytes; None when absent or unreadable."""
    return kib_field(text, "VmHWM")


def parse_involuntary(text: str) -> int:
    """`nonvoluntary_ctxt_switches` of a thread's /proc status text; 0 when absent."""
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name == "nonvoluntary_ctxt_switches":
            value = rest.strip()
            return int(value) if value.isdigit() else 0
    return 0


def child_pids(text: str) -> tuple[int, ...]:
    """The pids of /proc/<pid>/task/<tid>/children text (space-separated)."""
    return tuple(int(word) for word in text.split() if word.isdigit())
