"""`--batch -1` on the CPU: the batch predicted to fill about 70 % of the memory this process
may use, confirmed by one real step.

Two small steps of the measured step itself (batches 2 and 4, the run's model, weights,
classes and EMA, on probe batches as crowded with boxes as the dataset's densest sample) run
under the tensor ledger (`tensor_memory.phase_peaks`): each phase's tensor peak is a line in the
batch (the same lines every training profile's prediction uses). The process's own peak RSS
over the second step anchors them: the RSS at batch b is predicted as that anchor plus
RSS_PER_TENSOR_BYTE times the tensors' growth from batch 4, and the largest batch whose
prediction stays under the target (the seed's 70 % of the memory available to this process:
its own resident memory plus what the host, or its cgroup, still has available) is chosen.
One real step at that batch confirms it: its own peak RSS (`rss.WindowPeakRss`) must stay under
the target. Each confirming step becomes the next prediction's anchor, with the factor measured
between it and the previous one (small batches fragment the heap, so the factor taken from them
over-predicts large ones: at YOLOv9-t 128 px it predicted 16.1 GB for batch 503, which measured
10.5 GB). The search takes a confirmed batch within CLOSE_ENOUGH under the target, or the
cap, after at most MAX_CONFIRMS real steps: an error in the factor costs a step, never an
out-of-memory run.

The decision is `fit_host_batch`, pure over `HostProbe` (tested with a fake); `read_budget`
reads /proc/meminfo and the cgroup v2 limit. Must not print, or keep the probe model alive.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from libreyolo.analysis.tensor_memory import (
    RSS_PER_TENSOR_BYTE,
    PeakLine,
    largest_batch,
    lines_through,
    predict_peak,
)
from libreyolo.document.model import PeakPoint
from libreyolo.errors import NoProfileError
from libreyolo.measure.autobatch import MAX_BATCH, TARGET_SHARE, BatchCap
from libreyolo.measure.procfs import kib_field
from libreyolo.measure.rss import own_rss_bytes

PROBE_BATCHES = (2, 4)  # the first step also makes the gradients and the optimizer's state
MAX_CONFIRMS = 3  # real steps at predicted batches; each refines the next prediction
CLOSE_ENOUGH = 0.10  # a confirmed batch this close under the target is not refined further
MEMINFO = Path("/proc/meminfo")
CGROUP = Path("/sys/fs/cgroup")  # v2: memory.max ("max" or bytes) and memory.current
MB = 1e6


@dataclass(frozen=True, slots=True)
class HostBudget:
    """The memory this process may use, read once before the probes."""

    own_bytes: int  # this process's own resident memory now
    free_bytes: int  # MemAvailable, or the cgroup's room where that is less
    total_bytes: int  # MemTotal, or the cgroup's limit where that is less

    @property
    def available_bytes(self) -> int:
        return self.own_bytes + self.free_bytes

    @property
    def target_bytes(self) -> float:
        return TARGET_SHARE * self.available_bytes

    def describe(self) -> str:
        return (
            f"{TARGET_SHARE:.0%} of {self.available_bytes / 1e9:.1f} GB available to this "
            f"process ({self.free_bytes / 1e9:.1f} GB free of {self.total_bytes / 1e9:.1f} GB "
            f"total, {self.own_bytes / 1e9:.1f} GB its own)"
        )


def read_budget(meminfo: Path = MEMINFO, cgroup: Path = CGROUP) -> HostBudget:
    """The host's (or the cgroup's, where tighter) available memory and this process's own;
    NoProfileError where /proc cannot say (no /proc/meminfo: not Linux)."""
    try:
        text = meminfo.read_text(encoding="ascii", errors="replace")
    except OSError as err:
        raise NoProfileError(
            f"--batch -1: cannot read {meminfo} ({err.strerror or err}) to size the batch",
            hint="pass an explicit --batch",
        ) from None
    free, total = kib_field(text, "MemAvailable"), kib_field(text, "MemTotal")
    own = own_rss_bytes()
    if free is None or total is None or own is None:
        raise NoProfileError(
            f"--batch -1: {meminfo} or /proc/self/status lacks the memory figures it needs "
            "(MemAvailable, MemTotal, RssAnon)",
            hint="pass an explicit --batch",
        )
    limit, used = _cgroup_number(cgroup / "memory.max"), _cgroup_number(cgroup / "memory.current")
    if limit is not None and used is not None and limit < total:
        free, total = min(free, max(limit - used, 0)), limit
    return HostBudget(own_bytes=own, free_bytes=free, total_bytes=total)


def _cgroup_number(path: Path) -> int | None:
    """A cgroup v2 memory file's bytes; None for "max", a missing file or anything else."""
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


@dataclass(frozen=True, slots=True)
class HostProbeStep:
    own_peak_bytes: int  # the process's own peak RSS over the step
    phase_peak_bytes: Mapping[str, int] | None  # the tensors' peak per phase (tracked steps)


class HostProbe(Protocol):
    """One step of the measured step at `batch`: tracked (under the tensor ledger) or real."""

    def __call__(self, batch: int, *, tracked: bool) -> HostProbeStep: ...


def probe_lines(probe: HostProbe) -> tuple[tuple[PeakLine, ...], Anchor]:
    """The tensors' lines through the tracked probe steps (PROBE_BATCHES), and the anchor
    the last one's own peak RSS gives them."""
    points = []
    result = HostProbeStep(0, None)
    for batch in PROBE_BATCHES:
        result = probe(batch, tracked=True)
        points.append(PeakPoint(batch=batch, phase_peak_bytes=dict(result.phase_peak_bytes or {})))
    anchor = Anchor(PROBE_BATCHES[-1], float(result.own_peak_bytes), RSS_PER_TENSOR_BYTE)
    return lines_through(points), anchor


def fit_host_batch(probe: HostProbe, budget: HostBudget, cap: BatchCap) -> tuple[int, str]:
    """The batch predicted to fit the budget's target and confirmed by a real step, capped by
    the dataset, and the note saying so with the prediction and its margin."""
    lines, anchor = probe_lines(probe)
    target = budget.target_bytes
    fits: _Confirmed | None = None
    for _ in range(MAX_CONFIRMS):
        try:
            fitted = _predicted_batch(lines, anchor, budget)
        except NoProfileError:
            if fits is None:
                raise
            break  # a miss above the confirmed batch leaves nothing bigger to try
        batch = min(fitted, cap.max_batch, MAX_BATCH)
        if fits is not None and batch <= fits.batch:
            break  # the refined prediction gains nothing over the batch already confirmed
        predicted = anchor.rss_at(lines, batch)
        measured = probe(batch, tracked=False).own_peak_bytes
        if measured <= target:
            fits = _Confirmed(batch, predicted, measured, fitted)
            if target - measured <= CLOSE_ENOUGH * target or batch == cap.max_batch:
                break
        elif batch == 1:
            raise NoProfileError(
                f"--batch -1: one image does not fit {budget.describe()} (batch 1 peaked at "
                f"{measured / MB:.0f} MB)",
                hint="try a smaller --imgsz or model size, or free memory",
            )
        anchor = anchor.refined(lines, batch, measured)
    if fits is None:
        raise NoProfileError(
            f"--batch -1: {MAX_CONFIRMS} batches predicted to fit {budget.describe()} did not "
            f"(the last, {anchor.batch}, peaked at {anchor.rss_bytes / MB:.0f} MB)",
            hint="pass an explicit --batch",
        )
    return fits.batch, _note(fits, cap, budget)


@dataclass(frozen=True, slots=True)
class Anchor:
    """A measured own peak RSS at a batch, and the RSS per tensor byte of growth from it."""

    batch: int
    rss_bytes: float
    rss_per_tensor_byte: float

    def rss_at(self, lines: tuple[PeakLine, ...], batch: int) -> float:
        growth = (predict_peak(lines, batch) or 0.0) - (predict_peak(lines, self.batch) or 0.0)
        return self.rss_bytes + self.rss_per_tensor_byte * growth

    def refined(self, lines: tuple[PeakLine, ...], batch: int, measured: int) -> Anchor:
        """The anchor moved to `batch`, its factor the one measured between the two (kept
        where the tensors did not grow between them)."""
        growth = (predict_peak(lines, batch) or 0.0) - (predict_peak(lines, self.batch) or 0.0)
        factor = (measured - self.rss_bytes) / growth if growth > 0 else 0.0
        return Anchor(batch, float(measured), factor if factor > 0 else self.rss_per_tensor_byte)


@dataclass(frozen=True, slots=True)
class _Confirmed:
    batch: int
    predicted_bytes: float
    measured_bytes: int
    fitted: int  # the batch memory was predicted to fit, before the caps


def largest_under(lines: tuple[PeakLine, ...], anchor: Anchor, target_bytes: float) -> int | None:
    """The largest batch whose RSS `anchor` predicts under `target_bytes` (0: not one
    image); None where the lines do not grow with the batch."""
    room = (predict_peak(lines, anchor.batch) or 0.0) + (
        target_bytes - anchor.rss_bytes
    ) / anchor.rss_per_tensor_byte
    return largest_batch(lines, room)


def _predicted_batch(lines: tuple[PeakLine, ...], anchor: Anchor, budget: HostBudget) -> int:
    """The largest batch whose predicted RSS stays under the target (NoProfileError where
    the lines do not grow or not one image fits)."""
    fitted = largest_under(lines, anchor, budget.target_bytes)
    if fitted is None:
        raise NoProfileError(
            "--batch -1: the probe steps' memory did not grow with the batch, so no batch "
            "can be predicted from them",
            hint="pass an explicit --batch",
        )
    if fitted < 1:
        raise NoProfileError(
            f"--batch -1: not even one image is predicted to fit {budget.describe()} "
            f"(batch {anchor.batch} peaked at {anchor.rss_bytes / MB:.0f} MB)",
            hint="try a smaller --imgsz or model size, or free memory",
        )
    return fitted


def _note(fits: _Confirmed, cap: BatchCap, budget: HostBudget) -> str:
    margin = budget.target_bytes - fits.measured_bytes
    error = (fits.measured_bytes - fits.predicted_bytes) / fits.predicted_bytes
    confirmed = (
        f"predicted peak RSS {fits.predicted_bytes / MB:.0f} MB, measured "
        f"{fits.measured_bytes / MB:.0f} MB on one step ({error:+.1%}), margin "
        f"{margin / MB:.0f} MB ({margin / budget.target_bytes:.0%} of the target)"
    )
    head = f"--batch -1: batch {fits.batch}"
    if fits.batch == cap.max_batch and fits.batch < fits.fitted:
        head += f", capped at {fits.batch} so {cap.reason} (memory fits {fits.fitted})"
    elif fits.batch == MAX_BATCH and fits.batch < fits.fitted:
        head += f", at most {MAX_BATCH} (memory fits {fits.fitted})"
    return f"{head} fits {budget.describe()}: {confirmed}"
