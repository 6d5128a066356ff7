"""Allocator counters: recorded on CUDA (trace or not), nothing on CPU; retries count within the
window only; the profile's window memory joins the allocator's record with the trace's."""

from __future__ import annotations

import pytest
import torch

from libreyolo.analysis.device_memory import window_memory
from libreyolo.analysis.run_view import memory_view
from libreyolo.document.model import Memory, TraceAnalysis
from libreyolo.measure.memory import (
    allocator_memory,
    device_memory,
    largest_free_block,
    reset_peaks,
    retries_over_window,
)
from tests.profiles import training_profile

# Recorded `torch.cuda.memory_stats()` entries (trimmed): a process whose AutoBatch probe hit
# one OOM before the window began, then a window with no retry of its own.
AFTER_OOM_PROBE = {
    "num_alloc_retries": 1,
    "allocated_bytes.all.peak": 9_000_000_000,
    "reserved_bytes.all.peak": 9_500_000_000,
}
WINDOW_END_QUIET = {
    "num_alloc_retries": 1,
    "allocated_bytes.all.peak": 2_000_000_000,
    "reserved_bytes.all.peak": 2_400_000_000,
}
WINDOW_END_RETRIED = WINDOW_END_QUIET | {"num_alloc_retries": 3}


def _trace(memory: Memory, *, has_gpu: bool = True) -> TraceAnalysis:
    return TraceAnalysis(
        source="whole_trace", num_steps=0, window_ms=1.0, has_gpu=has_gpu, memory=memory
    )


def test_cpu_records_no_device_memory() -> None:
    before = reset_peaks(torch.device("cpu"))
    assert before == {}
    assert device_memory(torch.device("cpu"), before) is None


def test_an_earlier_oom_does_not_mark_a_quiet_window() -> None:
    memory = allocator_memory(AFTER_OOM_PROBE, WINDOW_END_QUIET)
    assert memory.num_alloc_retries == 0
    assert memory.thrash is False
    assert memory.peak_allocated_bytes == 2_000_000_000
    assert memory.peak_reserved_bytes == 2_400_000_000


def test_retries_within_the_window_are_thrash() -> None:
    assert retries_over_window(AFTER_OOM_PROBE, WINDOW_END_RETRIED) == 2
    assert allocator_memory(AFTER_OOM_PROBE, WINDOW_END_RETRIED).thrash is True


def test_missing_counters_read_as_none_and_zero() -> None:
    memory = allocator_memory({}, {})
    assert memory.num_alloc_retries == 0
    assert memory.peak_allocated_bytes is None and memory.thrash is False


def test_a_cuda_run_without_a_trace_keeps_its_peaks() -> None:
    profile = training_profile(
        "cuda:0", device_memory=allocator_memory(AFTER_OOM_PROBE, WINDOW_END_QUIET)
    )
    assert profile.metrics["peak_vram_mb"] == 2000.0
    assert profile.metrics["memory_pressure"] is False
    assert profile.metrics["cuda_mallocs_per_step"] is None  # only a trace counts cudaMalloc
    view = memory_view(profile)
    assert view is not None
    assert (view.peak_allocated_mb, view.peak_reserved_mb) == (2000.0, 2400.0)
    assert view.num_alloc_retries == 0


def test_retries_without_a_trace_are_memory_pressure() -> None:
    profile = training_profile(
        "cuda:0", device_memory=allocator_memory(AFTER_OOM_PROBE, WINDOW_END_RETRIED)
    )
    assert profile.metrics["memory_pressure"] is True
    assert profile.verdict is not None and profile.verdict.bound == "memory-pressure"


def test_the_allocator_and_the_trace_join() -> None:
    traced = Memory(peak_allocated_bytes=5, peak_reserved_bytes=None, num_mallocs=40, thrash=True)
    allocator = allocator_memory(AFTER_OOM_PROBE, WINDOW_END_QUIET)
    joined = window_memory(
        training_profile("cuda:0", trace=_trace(traced), device_memory=allocator)
    )
    assert joined == Memory(
        peak_allocated_bytes=2_000_000_000,
        peak_reserved_bytes=2_400_000_000,
        num_alloc_retries=0,
        num_mallocs=40,
        thrash=True,
    )
    # A file without the allocator's record (GPU fixture traces, older profiles): the trace's.
    assert window_memory(training_profile("cuda:0", trace=_trace(traced))) == traced
    assert window_memory(training_profile("cuda:0")) is None


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_peaks_and_retries_are_recorded() -> None:
    device = torch.device("cuda:0")
    before = reset_peaks(device)
    block = torch.empty(64 << 20, dtype=torch.uint8, device=device)
    merged = device_memory(device, before)
    assert merged is not None
    assert merged.peak_allocated_bytes is not None and merged.peak_reserved_bytes is not None
    assert merged.peak_allocated_bytes >= block.numel()
    assert merged.peak_reserved_bytes >= merged.peak_allocated_bytes
    assert merged.num_alloc_retries == 0


# `torch.cuda.memory_snapshot()`'s segments, as the allocator writes them (a recorded shape:
# one segment per cudaMalloc, its blocks "active_allocated", "active_awaiting_free" or
# "inactive"); only the inactive blocks are free for a new request.
SEGMENTS = [
    {
        "device": 0,
        "address": 0,
        "total_size": 20_971_520,
        "allocated_size": 12_582_912,
        "active_size": 12_582_912,
        "segment_type": "large",
        "blocks": [
            {"size": 12_582_912, "state": "active_allocated"},
            {"size": 6_291_456, "state": "inactive"},
            {"size": 2_097_152, "state": "inactive"},
        ],
    },
    {
        "device": 0,
        "address": 33_554_432,
        "total_size": 2_097_152,
        "segment_type": "small",
        "blocks": [{"size": 2_097_152, "state": "active_awaiting_free"}],
    },
]


def test_fragmentation_is_the_window_peak_of_split_blocks_and_the_largest_free_one() -> None:
    after = WINDOW_END_QUIET | {"inactive_split_bytes.all.peak": 600_000_000}
    memory = allocator_memory(AFTER_OOM_PROBE, after, SEGMENTS)
    assert memory.peak_inactive_split_bytes == 600_000_000
    assert memory.largest_free_block_bytes == 6_291_456
    assert largest_free_block([{"blocks": [{"size": 5, "state": "active_allocated"}]}]) == 0
    unrecorded = allocator_memory(AFTER_OOM_PROBE, WINDOW_END_QUIET)
    assert (unrecorded.peak_inactive_split_bytes, unrecorded.largest_free_block_bytes) == (
        None,
        None,
    )
