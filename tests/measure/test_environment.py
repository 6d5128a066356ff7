"""The environment records the measured device's memory: CUDA's total, none on a CPU."""

from __future__ import annotations

import pytest
import torch

from libreyolo.measure.environment import collect_environment


def test_a_cpu_run_records_no_device_memory() -> None:
    assert collect_environment(torch.device("cpu")).device_memory_bytes is None


@pytest.mark.gpu  # deselected by CI's -m "not gpu"; skipped on a machine without CUDA
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_cuda_run_records_the_devices_total_memory() -> None:
    env = collect_environment(torch.device("cuda"))
    assert env.device_memory_bytes == torch.cuda.get_device_properties(0).total_memory
