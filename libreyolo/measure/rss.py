"""The measuring process's peak resident memory over one window (Linux /proc).

Role: reset the kernel's resident-set high-water mark as the window starts (`5` written to
/proc/self/clear_refs, Linux 4.0+) and read it (VmHWM of /proc/self/status) as the window ends,
so the peak is the window's own: the model load, the warmup, an earlier `--repeat` trial or a
tensor freed before the window are not in it. Where the reset cannot be done (no /proc, an
older kernel, the write refused) there is no peak and one note says why: the VmHWM since the
process started would pass an earlier peak off as the window's. DataLoader workers are other
processes and are not included.

Must not print, or raise where /proc is missing or refuses: the measurement goes on without
the number.
"""

from __future__ import annotations

from pathlib import Path

from libreyolo.document.model import HostMemory
from libreyolo.measure.procfs import parse_vm_hwm

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
            peak = parse_vm_hwm(self._status.read_text(encoding="ascii", errors="replace"))
        except OSError as err:
            return None, f"{NOT_MEASURED}: cannot read {self._status} ({err.strerror or err})"
        if peak is None:
            return None, f"{NOT_MEASURED}: {self._status} has no VmHWM line"
        return HostMemory(peak_rss_bytes=peak), None
