"""Device memory truth from the CUDA caching allocator: peaks and allocation retries.

The trace holds `[memory]` events only when recorded with profile_memory (costly), and there is
no trace at all with `--no-trace` or when CUPTI records nothing, so the collector reads the
allocator's own counters and records them as the profile's `device_memory`, trace or not.
`num_alloc_retries` is a process-lifetime counter that `reset_peak_memory_stats` does not clear,
so it is read at the window's start and its end and only the difference counts: an earlier OOM
in the process (an AutoBatch probe, an earlier trial, a sweep point) must not mark this window
as memory pressure. Fragmentation: the window's peak of `inactive_split_bytes` (cached blocks
split by an allocation and not in use: memory the allocator holds but cannot hand to a larger
request) and, from the allocator's snapshot as the window ends, the largest free block. Must
not print; a no-op on CPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from libreyolo.document.model import Memory

# The allocator's stat keys (`torch.cuda.memory_stats`); max_memory_allocated/reserved read these.
RETRIES = "num_alloc_retries"
PEAK_ALLOCATED = "allocated_bytes.all.peak"
PEAK_RESERVED = "reserved_bytes.all.peak"
PEAK_INACTIVE_SPLIT = "inactive_split_bytes.all.peak"

AllocatorStats = Mapping[str, int]


def reset_peaks(device: torch.device) -> AllocatorStats:
    """Start the window here: the peak counters restart (so they cover the model and the
    window only) and the allocator's stats at this point come back (empty on CPU), to be
    passed to `device_memory` at the window's end."""
    if device.type != "cuda":
        return {}
    torch.cuda.reset_peak_memory_stats(device)
    return dict(torch.cuda.memory_stats(device))


def retries_over_window(before: AllocatorStats, after: AllocatorStats) -> int:
    """Allocation retries (cache flushed and the malloc tried again) within the window."""
    return max(int(after.get(RETRIES, 0)) - int(before.get(RETRIES, 0)), 0)


def allocator_memory(
    before: AllocatorStats, after: AllocatorStats, segments: Sequence[Mapping[str, Any]] = ()
) -> Memory:
    """The window's peaks and retries (retries mean the allocator had to free its cache and
    try again, i.e. memory thrash), its fragmentation, and the largest free block of
    `segments` (`torch.cuda.memory_snapshot()`; None without segments)."""
    retries = retries_over_window(before, after)
    peak_allocated, peak_reserved = after.get(PEAK_ALLOCATED), after.get(PEAK_RESERVED)
    inactive = after.get(PEAK_INACTIVE_SPLIT)
    return Memory(
        peak_allocated_bytes=None if peak_allocated is None else int(peak_allocated),
        peak_reserved_bytes=None if peak_reserved is None else int(peak_reserved),
        num_alloc_retries=retries,
        thrash=retries > 0,
        peak_inactive_split_bytes=None if inactive is None else int(inactive),
        largest_free_block_bytes=largest_free_block(segments) if segments else None,
    )


def largest_free_block(segments: Sequence[Mapping[str, Any]]) -> int:
    """The largest block not in use ("inactive") in the allocator's segments: the largest
    request the cache can serve without asking the driver (0 when every block is in use)."""
    return max(
        (
            int(block.get("size", 0))
            for segment in segments
            for block in segment.get("blocks", ())
            if block.get("state") == "inactive"
        ),
        default=0,
    )


def device_memory(device: torch.device, before: AllocatorStats) -> Memory | None:
    """The allocator's memory over the window that began with `before`; None off CUDA. Read it
    as the window ends, before anything else touches the device."""
    if device.type != "cuda":
        return None
    stats = torch.cuda.memory_stats(device)
    index = torch.cuda.current_device() if device.index is None else device.index
    segments = [s for s in torch.cuda.memory_snapshot() if s.get("device") == index]
    return allocator_memory(before, stats, segments)
