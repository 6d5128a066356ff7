"""Allocator counters: merged on CUDA, untouched on CPU; retries count within the window only."""

from __future__ import annotations

import pytest
import torch

from libreyolo.document.model import Memory, TraceAnalysis
from libreyolo.measure.memory import (
    reset_peaks,
    retries_over_window,
    window_memory,
    with_device_memory,
)

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


def _trace() -> TraceAnalysis:
    return TraceAnalysis(
        source="whole_trace",
        num_steps=0,
        window_ms=1.0,
        has_gpu=False,
        memory=Memory(peak_allocated_bytes=None, num_mallocs=0),
    )


def test_cpu_memory_is_left_alone() -> None:
    trace = _trace()
    before = reset_peaks(torch.device("cpu"))
    assert before == {}
    assert with_device_memory(trace, torch.device("cpu"), before) is trace


def test_an_earlier_oom_does_not_mark_a_quiet_window() -> None:
    memory = window_memory(AFTER_OOM_PROBE, WINDOW_END_QUIET, Memory())
    assert memory.num_alloc_retries == 0
    assert memory.thrash is False
    assert memory.peak_allocated_bytes == 2_000_000_000
    assert memory.peak_reserved_bytes == 2_400_000_000


def test_retries_within_the_window_are_thrash() -> None:
    assert retries_over_window(AFTER_OOM_PROBE, WINDOW_END_RETRIED) == 2
    assert window_memory(AFTER_OOM_PROBE, WINDOW_END_RETRIED, Memory()).thrash is True


def test_missing_counters_read_as_none_and_zero() -> None:
    memory = window_memory({}, {}, Memory())
    assert memory.num_alloc_retries == 0
    assert memory.peak_allocated_bytes is None and memory.thrash is False


def test_traced_peaks_win_over_the_allocator() -> None:
    traced = Memory(peak_allocated_bytes=5, peak_reserved_bytes=6, thrash=True)
    memory = window_memory({}, WINDOW_END_QUIET, traced)
    assert (memory.peak_allocated_bytes, memory.peak_reserved_bytes) == (5, 6)
    assert memory.thrash is True


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_peaks_and_retries_are_recorded() -> None:
    device = torch.device("cuda:0")
    before = reset_peaks(device)
    block = torch.empty(64 << 20, dtype=torch.uint8, device=device)
    merged = with_device_memory(_trace(), device, before).memory
    assert merged.peak_allocated_bytes is not None and merged.peak_reserved_bytes is not None
    assert merged.peak_allocated_bytes >= block.numel()
    assert merged.peak_reserved_bytes >= merged.peak_allocated_bytes
    assert merged.num_alloc_retries == 0
