"""`--batch -1` on CUDA: fit the training batch to about 70 % of the memory free to this run.

A few real training steps of the measured step itself (the run's model, weights, classes, AMP
and EMA, on probe batches as crowded with boxes as the dataset's densest mosaic sample) give
(batch, peak allocated bytes) points; a least-squares line through them is solved for the
target share of the memory available to this process (free plus what our caching allocator
already holds, so another process's memory is never promised to us; on an idle device that is
the spec's ~70 % of the device, less the CUDA context). Probing stops early at an
out-of-memory error or once a probe passes 90 % of that memory. The fitted batch is then capped
so the measured steps fit one epoch of the dataset (the built-in synthetic set: so the whole
run fits the largest set we generate).

Every torch.cuda call sits behind `DeviceMemory`, so the decision is tested with a fake device.
Must not: print, keep the probe model alive after the fit, or touch memory it did not allocate.
"""

from __future__ import annotations

import gc
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import torch

from libreyolo.errors import NoProfileError

if TYPE_CHECKING:
    from libreyolo.measure.window import WindowPlan

TARGET_SHARE = 0.70  # the spec's "about 70 % of device memory": headroom for fragmentation
STOP_SHARE = 0.90  # a probe above this is too close to OOM to probe further
PROBE_BATCHES = (1, 2, 4, 8, 16)
MAX_BATCH = 1024
# Both families' mosaic (p 1.0) puts four images' boxes into one sample, so a probe image
# carries four times the densest label file's rows (YOLOX's MixUp may blend in more, but its
# targets keep at most MAX_LABELS, where its probe_batch caps).
MOSAIC_TILES = 4

ProbeStep = Callable[[int], object]  # one measured training step on a probe batch of that size


class DeviceMemory(Protocol):
    """The few device-memory reads and actions AutoBatch needs (CUDA's, or a test's fake)."""

    def free_and_total_bytes(self) -> tuple[int, int]: ...
    def reserved_bytes(self) -> int: ...
    def reset_peak(self) -> None: ...
    def peak_allocated_bytes(self) -> int: ...
    def empty_cache(self) -> None: ...
    def synchronize(self) -> None: ...


class CudaMemory:
    """`DeviceMemory` of one CUDA device."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def free_and_total_bytes(self) -> tuple[int, int]:
        free, total = torch.cuda.mem_get_info(self.device)
        return int(free), int(total)

    def reserved_bytes(self) -> int:
        return int(torch.cuda.memory_reserved(self.device))

    def reset_peak(self) -> None:
        torch.cuda.reset_peak_memory_stats(self.device)

    def peak_allocated_bytes(self) -> int:
        return int(torch.cuda.max_memory_allocated(self.device))

    def empty_cache(self) -> None:
        torch.cuda.empty_cache()

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)


@dataclass(frozen=True, slots=True)
class MemoryBudget:
    """What the device holds for this run, read once before the probes."""

    free_bytes: int  # free on the device (mem_get_info)
    reserved_bytes: int  # held by our caching allocator, reusable by us
    total_bytes: int

    @property
    def available_bytes(self) -> int:
        """Memory this process can use: never another process's share of the device."""
        return min(self.free_bytes + self.reserved_bytes, self.total_bytes)

    def describe(self) -> str:
        return (
            f"{TARGET_SHARE:.0%} of {self.available_bytes / 1e9:.1f} GB available "
            f"({self.free_bytes / 1e9:.1f} GB free of {self.total_bytes / 1e9:.1f} GB total)"
        )


@dataclass(frozen=True, slots=True)
class BatchCap:
    """The largest batch the dataset allows, and why (the note's words)."""

    max_batch: int
    reason: str


@dataclass(frozen=True, slots=True)
class DataLimits:
    """What AutoBatch needs of the dataset before its loader exists."""

    names: tuple[str, ...]
    boxes_per_image: int  # boxes in each probe image: the densest training sample's
    cap: BatchCap

    @property
    def nc(self) -> int:
        return len(self.names)


def epoch_cap(num_images: int, num_measured: int) -> BatchCap:
    """The largest batch whose epoch holds `num_measured` batches (the loader drops the ragged
    last batch whenever the set holds a full one: `loader.batches_available`); at least 1."""
    return BatchCap(
        max(1, num_images // num_measured),
        f"the {num_measured} measured steps fit one epoch of {num_images} images",
    )


def synthetic_cap(num_total: int, max_images: int) -> BatchCap:
    """The largest batch whose whole run (warmup, measured and bare steps) fits the largest
    synthetic set we generate (it is generated to hold the run); at least 1."""
    return BatchCap(
        max(1, max_images // num_total),
        f"the run's {num_total} steps fit the largest synthetic set ({max_images} images)",
    )


def data_limits(data: str, plan: WindowPlan) -> DataLimits:
    """The classes, probe box count and batch cap of `data` (a name or a dataset YAML).

    A fixed dataset is only listed, not scanned: its cap counts the listed images (a bad image
    skipped later can still leave the window one batch short, exit 3 as for any --batch).
    """
    from libreyolo.workload.data import synthetic
    from libreyolo.workload.data.dataset import max_label_rows
    from libreyolo.workload.data.dataset_config import is_generated, resolve_dataset

    if is_generated(data):
        return DataLimits(
            synthetic.CLASS_NAMES,
            MOSAIC_TILES * synthetic.MAX_BOXES_PER_IMAGE,
            synthetic_cap(plan.num_total, synthetic.MAX_TRAIN_IMAGES),
        )
    spec = resolve_dataset(data)
    rows = max_label_rows(spec.label_paths)
    return DataLimits(
        spec.names, MOSAIC_TILES * rows, epoch_cap(spec.num_images, plan.num_measured)
    )


def fit_batch(
    points: Sequence[tuple[int, int]], memory_bytes: int, share: float = TARGET_SHARE
) -> int:
    """The largest batch whose predicted peak stays under `share` of `memory_bytes`."""
    if len(points) < 2:
        return max(1, points[0][0] if points else 1)
    slope, intercept = statistics.linear_regression([b for b, _ in points], [m for _, m in points])
    if slope <= 0:  # memory did not grow with the batch: trust the largest batch that ran
        return max(b for b, _ in points)
    return int(min(max((share * memory_bytes - intercept) // slope, 1), MAX_BATCH))


def choose_batch(
    points: Sequence[tuple[int, int]], budget: MemoryBudget, cap: BatchCap
) -> tuple[int, str]:
    """The fitted batch, capped by the dataset, and the note saying how it was chosen."""
    if not points:
        raise NoProfileError(
            "--batch -1: the model does not fit even one image in GPU memory "
            f"({budget.available_bytes / 1e9:.1f} GB available of "
            f"{budget.total_bytes / 1e9:.1f} GB)",
            hint="try a smaller --imgsz or model size, --amp, or free the GPU",
        )
    fitted = fit_batch(points, budget.available_bytes)
    probes = ", ".join(f"{b}: {m / 1e6:.0f} MB" for b, m in points)
    memory = f"{budget.describe()}; probes {probes}"
    if fitted > cap.max_batch:
        return cap.max_batch, (
            f"--batch -1: batch {cap.max_batch}, capped at {cap.max_batch} so {cap.reason} "
            f"(memory fits {fitted}: {memory})"
        )
    return fitted, f"--batch -1: batch {fitted} fits {memory}"


def probe_memory(
    run_step: ProbeStep,
    memory: DeviceMemory,
    available_bytes: int,
    batches: Sequence[int] = PROBE_BATCHES,
) -> list[tuple[int, int]]:
    """(batch, peak allocated bytes) for each probe batch that fits, in order, stopping at
    the first out-of-memory error or the first peak above STOP_SHARE of `available_bytes`."""
    points: list[tuple[int, int]] = []
    for batch in batches:
        memory.empty_cache()
        memory.reset_peak()
        try:
            run_step(batch)
            memory.synchronize()
        except torch.cuda.OutOfMemoryError:
            break
        peak = memory.peak_allocated_bytes()
        points.append((batch, peak))
        if peak > STOP_SHARE * available_bytes:
            break
    return points


def autobatch(
    make_step: Callable[[], ProbeStep], memory: DeviceMemory, cap: BatchCap
) -> tuple[int, str]:
    """The fitted batch and its note. `make_step` builds the probe model and step; both are
    dropped and the allocator's cache emptied before this returns, even after an OOM, so the
    measured run starts from what it would have without the probes."""
    memory.empty_cache()
    free, total = memory.free_and_total_bytes()
    budget = MemoryBudget(free, memory.reserved_bytes(), total)
    batches = [b for b in PROBE_BATCHES if b <= cap.max_batch] or [1]
    step = make_step()
    try:
        points = probe_memory(step, memory, budget.available_bytes, batches)
    finally:
        del step  # the probe model's last reference (a closure over it)
        gc.collect()  # modules with reference cycles would otherwise outlive the fit
        memory.empty_cache()
    return choose_batch(points, budget, cap)
