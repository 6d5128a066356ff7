"""Allocator counters: merged on CUDA, untouched on CPU."""

from __future__ import annotations

import pytest
import torch

from libreyolo.document.model import Memory, TraceAnalysis
from libreyolo.measure.memory import reset_peaks, with_device_memory


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
    reset_peaks(torch.device("cpu"))
    assert with_device_memory(trace, torch.device("cpu")) is trace


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_peaks_and_retries_are_recorded() -> None:
    device = torch.device("cuda:0")
    reset_peaks(device)
    block = torch.empty(64 << 20, dtype=torch.uint8, device=device)
    merged = with_device_memory(_trace(), device).memory
    assert merged.peak_allocated_bytes >= block.numel()
    assert merged.peak_reserved_bytes >= merged.peak_allocated_bytes
    assert merged.num_alloc_retries is not None
