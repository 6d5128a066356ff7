"""In-memory profiles with a `compute` record, for the readers of FLOPs, MFU and energy: a busy
H200 training run with both peaks and energy, and CPU runs with a measured peak only."""

from __future__ import annotations

import msgspec.structs

from libreyolo.document.model import Compute, Energy, Flops, Host, Peak, Profile, TraceAnalysis
from tests.profiles import training_profile

H200 = "NVIDIA H200"
TABLE = Peak(
    source="table",
    dtype="fp16",
    tflops=989.4,
    reference="NVIDIA H200 Tensor Core GPU datasheet (2024), SXM: sparse figures / 2",
)
MEASURED = Peak(
    source="measured",
    dtype="fp16",
    tflops=700.0,
    reference="best of 5 runs of 8192x8192 fp16 GEMMs",
    cached=False,
    calibration_ms=900.0,
    contended=False,
)
CPU_PEAK = Peak(
    source="measured",
    dtype="fp32",
    tflops=0.326,
    reference="best of 5 runs of 2048x2048 fp32 GEMMs",
    cached=True,
)
# A training step of 26.1 GFLOP per image (8.7 forward + 17.4 backward) at 200 img/s: 5.22
# TFLOP/s, 0.53 % of the H200's dense fp16 peak.
TRAIN_FLOPS = Flops(
    per_image=26.1e9,
    forward_per_image=8.7e9,
    backward_per_image=17.4e9,
    batch=4,
    imgsz=64,
    count_ms=50.0,
)
ENERGY = Energy(joules=26.88, window_ms=160.0, num_images=32, power_limit_w=700.0)


def busy_trace(busy_share: float) -> TraceAnalysis:
    """Eight traced steps over 160 ms with the GPU busy `busy_share` of them."""
    busy_ms = 160.0 * busy_share
    return TraceAnalysis(
        source="profiler_steps",
        num_steps=8,
        window_ms=160.0,
        has_gpu=True,
        gpu_busy_ms=busy_ms,
        gpu_kernel_busy_ms=busy_ms,
        device_window_ms=160.0,
        device_busy_ms=busy_ms,
        kernel_sum_ms=busy_ms,
        num_kernels=800,
    )


def gpu_profile(
    *,
    flops: Flops | None = TRAIN_FLOPS,
    busy_share: float = 0.95,
    math_dtype: str = "fp16",
    host: Host | None = None,
) -> Profile:
    """The busy H200 training profile: both peaks, energy, finalized."""
    peaks = [msgspec.structs.replace(p, dtype=math_dtype) for p in (TABLE, MEASURED)]
    compute = Compute(math_dtype=math_dtype, flops=flops, peaks=peaks, energy=ENERGY)
    return training_profile(
        "cuda:0", trace=busy_trace(busy_share), compute=compute, device_name=H200, host=host
    )


def cpu_profile(*, flops: Flops | None = None, peaks: tuple[Peak, ...] = (CPU_PEAK,)) -> Profile:
    """A CPU training profile (200 img/s) with a measured fp32 peak, finalized."""
    compute = Compute(math_dtype="fp32", flops=flops, peaks=list(peaks))
    return training_profile("cpu", compute=compute)


def forward_flops(gflop: float) -> Flops:
    """A forward-only count of `gflop` GFLOP per image."""
    flops = gflop * 1e9
    return Flops(per_image=flops, forward_per_image=flops, batch=4, imgsz=64, count_ms=1.0)
