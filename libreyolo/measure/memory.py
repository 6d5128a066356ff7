"""Device memory truth from the CUDA caching allocator: peaks and allocation retries.

The trace holds `[memory]` events only when recorded with profile_memory (costly), so the
collector reads the allocator's own counters instead and merges them into the trace's Memory.
Must not print; a no-op on CPU.
"""

from __future__ import annotations

import dataclasses

import torch

from libreyolo.document.model import TraceAnalysis


def reset_peaks(device: torch.device) -> None:
    """Start the peak counters at this point (so they cover the model and the window only)."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def with_device_memory(trace: TraceAnalysis, device: torch.device) -> TraceAnalysis:
    """`trace` with the allocator's peak allocated/reserved bytes and retry count; retries mean
    the allocator had to free its cache and try again, i.e. memory thrash."""
    if device.type != "cuda":
        return trace
    stats = torch.cuda.memory_stats(device)
    retries = int(stats.get("num_alloc_retries", 0))
    memory = dataclasses.replace(
        trace.memory,
        peak_allocated_bytes=trace.memory.peak_allocated_bytes
        or int(torch.cuda.max_memory_allocated(device)),
        peak_reserved_bytes=trace.memory.peak_reserved_bytes
        or int(torch.cuda.max_memory_reserved(device)),
        num_alloc_retries=retries,
        thrash=trace.memory.thrash or retries > 0,
    )
    return dataclasses.replace(trace, memory=memory)
