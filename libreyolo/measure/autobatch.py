"""`--batch -1` on CUDA: fit the training batch to about 70 % of device memory.

A few real training steps at small batch sizes give (batch, peak allocated bytes) points; a
least-squares line through them is solved for the target share of the device's memory. Probing
stops early at an out-of-memory error or once a probe passes 90 % of memory. Must not print.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

import torch

TARGET_SHARE = 0.70  # the spec's "about 70 % of device memory": headroom for fragmentation
STOP_SHARE = 0.90  # a probe above this is too close to OOM to probe further
PROBE_BATCHES = (1, 2, 4, 8, 16)
MAX_BATCH = 1024


def fit_batch(
    points: Sequence[tuple[int, int]], total_bytes: int, share: float = TARGET_SHARE
) -> int:
    """The largest batch whose predicted peak stays under `share` of `total_bytes`."""
    if len(points) < 2:
        return max(1, points[0][0] if points else 1)
    slope, intercept = statistics.linear_regression([b for b, _ in points], [m for _, m in points])
    if slope <= 0:  # memory did not grow with the batch: trust the largest batch that ran
        return max(b for b, _ in points)
    return int(min(max((share * total_bytes - intercept) // slope, 1), MAX_BATCH))


def probe_memory(
    run_step: Callable[[int], None], device: torch.device, batches: Sequence[int] = PROBE_BATCHES
) -> list[tuple[int, int]]:
    """(batch, peak allocated bytes) for each probe batch that fits."""
    total = torch.cuda.get_device_properties(device).total_memory
    points: list[tuple[int, int]] = []
    for batch in batches:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
        try:
            run_step(batch)
            torch.cuda.synchronize(device)
        except torch.cuda.OutOfMemoryError:
            break
        peak = int(torch.cuda.max_memory_allocated(device))
        points.append((batch, peak))
        if peak > STOP_SHARE * total:
            break
    torch.cuda.empty_cache()
    return points


def autobatch(run_step: Callable[[int], None], device: torch.device) -> tuple[int, str]:
    """The fitted batch and a note saying how it was chosen."""
    points = probe_memory(run_step, device)
    total = torch.cuda.get_device_properties(device).total_memory
    batch = fit_batch(points, total)
    probes = ", ".join(f"{b}: {m / 1e6:.0f} MB" for b, m in points)
    return batch, (
        f"--batch -1: batch {batch} fits ~{TARGET_SHARE:.0%} of "
        f"{total / 1e9:.1f} GB (probes {probes})"
    )
