"""The measuring process's peak resident memory over one window (Linux /proc).

Role: reset the kernel's resident-set high-water mark as the window starts (`5` written to
/proc/self/clear_refs, Linux 4.0+) and read it (VmHWM of /proc/self/status) as the window ends,
so the peak is the window's own: the model load, the warmup, an earlier `--repeat` trial or a
tensor freed before the window are not in it. Where the reset cannot be done (no /proc, an
older kernel, the write refused) there is no peak and one note says why: the VmHWM since the
process started would pass an earlier peak off as the window's. DataLoader workers are other
processes and are not included.

The peak is the process's own memory: VmHWM less the file-backed pages resident as the window
ends (RssFile: the shared libraries' code and data, mapped files). Those pages are shared with
every process that maps them and dropped under pressure, and how many a process counts depends
on how it started, not on what it trains: a sweep point forked from a server that loaded torch
counts only the pages it touches itself (measured: 69 MB against a fresh process's 349 MB, at
the same settings). File pages only grow during a window, so the difference can only err low
by what the window itself first touched, after warmup: a few MB. `own_rss_bytes` reads the
process's own memory now (RssAnon + RssShmem), the baseline a profile states.

Must not print, or raise where /proc is missing or refuses: the measurement goes on without
the number.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from libreyolo.document.model import HostMemory
from libreyolo.measure.procfs import kib_field, parse_vm_hwm

CLEAR_REFS = Path("/proc/self/clear_refs")
STATUS = Path("/proc/self/status")
RESET_PEAK = b"5"  # clear_refs: set the peak RSS (VmHWM) to the current RSS
NOT_MEASURED = "peak RSS not measured"


class WindowPeakRss:
    """`start()` as the window's first iteration begins, `end()` as its last one ends; of this
    process, or of process `pid` (a trainer probe: its /proc files are its owner's to reset)."""

    def __init__(self, pid: int | None = None) -> None:
        self._problem: str | None = "the window never started"
        self._refs = CLEAR_REFS if pid is None else Path(f"/proc/{pid}/clear_refs")
        self._status = STATUS if pid is None else Path(f"/proc/{pid}/status")

    def start(self) -> None:
        try:
            with self._refs.open("wb", buffering=0) as refs:
                refs.write(RESET_PEAK)
        except OSError as err:
            reason = err.strerror or type(err).__name__
            self._problem = (
                f"cannot reset the peak through {self._refs} ({reason}), and the process's "
                "peak since it started is not the window's"
            )
        else:
            self._problem = None

    def end(self) -> tuple[HostMemory | None, str | None]:
        """The window's peak, or None and the note saying why it is unknown."""
        if self._problem is not None:
            return None, f"{NOT_MEASURED}: {self._problem}"
        try:
            text = self._status.read_text(encoding="ascii", errors="replace")
        except OSError as err:
            return None, f"{NOT_MEASURED}: cannot read {self._status} ({err.strerror or err})"
        peak = parse_vm_hwm(text)
        if peak is None:
            return None, f"{NOT_MEASURED}: {self._status} has no VmHWM line"
        library = kib_field(text, "RssFile")
        if library is None:  # Linux < 4.5: the peak would count the libraries' pages
            return None, f"{NOT_MEASURED}: {self._status} has no RssFile line (Linux 4.5+)"
        return HostMemory(peak_rss_bytes=peak - library, library_rss_bytes=library), None


def own_rss_bytes() -> int | None:
    """The process's own resident memory now (RssAnon + RssShmem of its /proc status), or
    None where it cannot be read."""
    try:
        text = STATUS.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    anon, shmem = kib_field(text, "RssAnon"), kib_field(text, "RssShmem")
    return None if anon is None or shmem is None else anon + shmem


def with_baseline(memory: HostMemory | None, baseline_bytes: int | None) -> HostMemory | None:
    """The window's memory with the process's own RSS from before the model was built."""
    if memory is None:
        return None
    return msgspec.structs.replace(memory, baseline_rss_bytes=baseline_bytes)
