"""The device memory of a profile's window: the allocator's counters and the trace's, as one.

`Profile.device_memory` (the CUDA allocator, recorded with or without a trace) holds the peaks
and the retries; the trace adds what only it sees (cudaMalloc/cudaFree calls, peaks from
`[memory]` events in files without the allocator's record: GPU fixture traces, older profiles).
Pure: imports no torch.
"""

from __future__ import annotations

from libreyolo.document.model import Memory, Profile


def window_memory(profile: Profile) -> Memory | None:
    """The window's device memory; None when neither the allocator nor a trace recorded any."""
    traced = profile.trace.memory if profile.trace is not None else None
    allocator = profile.device_memory
    if allocator is None or traced is None:
        return allocator or traced
    return Memory(
        peak_allocated_bytes=_first(allocator.peak_allocated_bytes, traced.peak_allocated_bytes),
        peak_reserved_bytes=_first(allocator.peak_reserved_bytes, traced.peak_reserved_bytes),
        num_alloc_retries=_first(allocator.num_alloc_retries, traced.num_alloc_retries),
        num_mallocs=traced.num_mallocs,
        thrash=allocator.thrash or traced.thrash,
        peak_inactive_split_bytes=allocator.peak_inactive_split_bytes,
        largest_free_block_bytes=allocator.largest_free_block_bytes,
    )


def _first(value: int | None, fallback: int | None) -> int | None:
    return value if value is not None else fallback
