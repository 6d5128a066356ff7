"""Whether one batch of a measurement fits the host memory this process may still use.

Role: turn a probe's activation bytes (measured once at a small side, batch 1) and the tensors a
batch makes on the host (the letterboxed input; for training the loader's batches in flight)
into bytes an image plus fixed bytes, read the memory available to this process from the text
of /proc/meminfo and a cgroup v2 group's files, and, when a batch cannot fit, say so in one
line with the numbers and the batch that would. Pure: parses text it is given and does
arithmetic; no file I/O and no torch (memory_check.py reads the files and runs the probe).

The constants are fitted to measured peak RSS growth, erring high (inference within ~1.05x,
training ~1.15x on YOLOv9-t), and a run is refused only when the estimate exceeds all the
memory available, not a share of it: a run that fits comfortably is never refused.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from libreyolo.errors import WontFitError
from libreyolo.measure.procfs import kib_field

CHANNELS = 3
FLOAT32_BYTES = 4
# The forward's live tensors are what the probe sees; malloc keeps freed blocks around and the
# convolution kernels' workspaces are no tensors. The peak RSS growth over an inference window
# was 1.24x the scaled live set an image (YOLOv9-t at 320 and 640 px, batch 8 and 32, CPU).
ALLOCATOR_SLACK = 1.25
# Training keeps every leaf module's output for the backward pass (the probe sums them), and
# the backward pass makes a gradient beside each one before it is freed. The peak RSS growth
# over a training window was 1.26x the kept bytes an image (YOLOv9-t, 320 px, batch 4 and 16).
BACKWARD_FACTOR = 1.5
# Any window grows the process by a batch-independent amount besides (kernel workspaces and
# caches, malloc arenas): measured 55 MB for inference and ~70 MB for training, YOLOv9-t.
WINDOW_OVERHEAD_BYTES = 64 * 2**20
# Besides the batch in flight, a loader worker builds its next batch: the samples (uint8, one
# image each) and their stack (uint8) before the float copy, so 2 x the uint8 bytes per image.
BUILD_UINT8_COPIES = 2
# A forked DataLoader worker shares the parent's pages until it writes them; measured ~23 MB
# private per worker (YOLOv9-t, 320 px, batch 4), rounded up.
WORKER_BYTES = 32 * 2**20
# Training on the CPU adds per parameter: its gradient, SGD's momentum and foreach temporaries
# (the EMA copy exists before the check, so the available memory already excludes it).
PARAM_COPIES = 3


@dataclass(frozen=True, slots=True)
class HostNeed:
    """Host bytes a batch needs: `per_image_bytes` x batch + `fixed_bytes`."""

    per_image_bytes: int
    fixed_bytes: int = 0

    def total_bytes(self, batch: int) -> int:
        return self.per_image_bytes * batch + self.fixed_bytes

    def batch_that_fits(self, available_bytes: int) -> int:
        """The largest batch whose need stays within `available_bytes`; 0 when none does."""
        room = available_bytes - self.fixed_bytes
        if room < self.per_image_bytes:
            return 0
        return room // max(self.per_image_bytes, 1)


def scaled(probe_bytes: int, probe_imgsz: int, imgsz: int) -> int:
    """Bytes measured at `probe_imgsz` scaled to `imgsz`: activations grow with the pixels."""
    return math.ceil(probe_bytes * (imgsz / probe_imgsz) ** 2)


def image_bytes(imgsz: int, *, dtype_bytes: int = 1) -> int:
    """One letterboxed (3, imgsz, imgsz) image, uint8 by default."""
    return CHANNELS * imgsz * imgsz * dtype_bytes


def infer_need(
    imgsz: int, *, live_bytes_per_image: int, on_cpu: bool, decoded_bytes_per_image: int = 0
) -> HostNeed:
    """An inference batch on the host. On the CPU: the forward's peak live tensors, which hold
    the float input batch (`live_bytes_per_image`, scaled from the probe) with ALLOCATOR_SLACK,
    and a letterboxed uint8 image each (preprocess copies each image's bytes once). On an
    accelerator the batch is letterboxed on the device: only the files decoded inside the
    window (`--include-decode`) stay on the host."""
    per_image = decoded_bytes_per_image
    if not on_cpu:
        return HostNeed(per_image)
    per_image += image_bytes(imgsz) + math.ceil(live_bytes_per_image * ALLOCATOR_SLACK)
    return HostNeed(per_image, WINDOW_OVERHEAD_BYTES)


def batches_in_flight(workers: int, prefetch_factor: int, *, pinned: bool) -> int:
    """Loader batches alive at once besides the one being stepped: each worker keeps
    `prefetch_factor` batches queued (in shared memory); with pinning, one more is being copied
    into pinned memory (the rest were freed from shared memory once pinned). With no workers
    the main process loads each batch itself, so only the stepped one lives."""
    queued = workers * prefetch_factor if workers > 0 else 0
    return queued + (1 if pinned else 0)


def train_need(
    imgsz: int,
    *,
    kept_bytes_per_image: int,
    workers: int,
    prefetch_factor: int,
    pinned: bool,
    on_cpu: bool,
    param_bytes: int,
) -> HostNeed:
    """A training batch on the host: the loader's float batches (the stepped one, its
    channels-last copy on the CPU, the ones in flight) and the uint8 samples each builder
    holds, one worker's private pages each; on the CPU also the activations the backward pass
    keeps (`kept_bytes_per_image`, scaled from the probe, x BACKWARD_FACTOR) and the gradient
    and optimiser copies of the parameters."""
    float_batch = image_bytes(imgsz, dtype_bytes=FLOAT32_BYTES)
    stepped = 2 if on_cpu else 1  # the step's channels-last copy happens on the host on a CPU
    loader = float_batch * (stepped + batches_in_flight(workers, prefetch_factor, pinned=pinned))
    loader += image_bytes(imgsz) * BUILD_UINT8_COPIES * max(workers, 1)
    per_image = loader
    fixed = WORKER_BYTES * workers
    if on_cpu:
        per_image += math.ceil(kept_bytes_per_image * BACKWARD_FACTOR)
        fixed += PARAM_COPIES * param_bytes + WINDOW_OVERHEAD_BYTES
    return HostNeed(per_image, fixed)


def parse_mem_available(meminfo: str) -> int | None:
    """MemAvailable of /proc/meminfo text, in bytes; None when absent (kernels before 3.14)."""
    return kib_field(meminfo, "MemAvailable")


def cgroup_room(max_text: str, current_text: str, stat_text: str = "") -> int | None:
    """What a cgroup v2 group still lets its processes allocate: memory.max - memory.current,
    plus the group's inactive file cache (charged to it, but dropped before an OOM); None for
    no limit ("max") or unreadable numbers."""
    limit, current = max_text.strip(), current_text.strip()
    if not limit.isdigit() or not current.isdigit():
        return None
    reclaimable = 0
    for line in stat_text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == "inactive_file" and fields[1].isdigit():
            reclaimable = int(fields[1])
    return max(int(limit) - int(current) + reclaimable, 0)


def available_bytes(mem_available: int | None, cgroup_rooms: Iterable[int | None]) -> int | None:
    """The least of MemAvailable and every enclosing group's room; None without MemAvailable
    (no /proc: the check is skipped)."""
    if mem_available is None:
        return None
    return min([mem_available, *(room for room in cgroup_rooms if room is not None)])


def check_fits(
    need: HostNeed,
    *,
    batch: int,
    imgsz: int,
    available: int | None,
    other_levers: tuple[str, ...] = (),
) -> None:
    """WontFitError (exit 3) naming the numbers and the way out when `batch` at `imgsz`
    needs more than `available` bytes; nothing when it fits or nothing is known (None)."""
    total = need.total_bytes(batch)
    if available is None or total <= available:
        return
    fits = need.batch_that_fits(available)
    levers = [f"--batch to about {_round_down(fits)}"] if fits else []
    levers += ["--imgsz", *other_levers]
    raise WontFitError(
        f"--batch {batch} at --imgsz {imgsz} needs about {_gb(total)} of memory "
        f"({_size(need.per_image_bytes)} an image); {_gb(available)} are available",
        hint=f"lower {_either(levers)}",
    )


def _gb(num_bytes: int) -> str:
    return f"{num_bytes / 1e9:.1f} GB"


def _size(num_bytes: int) -> str:
    return _gb(num_bytes) if num_bytes >= 1e9 else f"{num_bytes / 1e6:.1f} MB"


def _round_down(batch: int) -> int:
    """Two significant digits, rounded down (1427 -> 1400): what 'about' promises to fit."""
    if batch < 100:
        return batch
    unit = 10 ** (len(str(batch)) - 2)
    return batch // unit * unit


def _either(levers: list[str]) -> str:
    return levers[0] if len(levers) == 1 else f"{', '.join(levers[:-1])} or {levers[-1]}"
