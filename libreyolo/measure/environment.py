"""Where the measurement ran: Python, platform, CPUs, threads, torch/CUDA, device names
and the measured device's memory.

Role: build the profile's `Environment` from the live process. Must not change any setting
(threads, cuDNN flags) or initialise CUDA on a CPU run: reading device names on a CPU-only
measurement would create a CUDA context the run never used.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch

from libreyolo.document.model import Environment


def _cpu_name() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def device_name(device: torch.device) -> str | None:
    """What `device` is: the GPU's name, "Apple MPS" or the CPU's model name."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return "Apple MPS"
    return _cpu_name()


def collect_environment(device: torch.device) -> Environment:
    """The Environment of a measurement on `device`."""
    gpu_names: list[str] = []
    memory_bytes: int | None = None
    if device.type == "cuda":
        gpu_names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        memory_bytes = int(torch.cuda.get_device_properties(device).total_memory)
    return Environment(
        python=platform.python_version(),
        platform=platform.platform(),
        num_cpus=os.cpu_count(),
        num_threads=torch.get_num_threads(),
        torch=str(torch.__version__),
        cuda=torch.version.cuda,
        device_name=device_name(device),
        gpu_names=gpu_names,
        device_memory_bytes=memory_bytes,
    )
