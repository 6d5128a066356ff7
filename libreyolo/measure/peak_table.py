"""Dense datasheet peaks (TFLOP/s) of the GPUs people train and serve YOLO on, by math dtype.

Role: match a CUDA device name to a row and give its dense peak in a dtype, with the row's
source. Datasheets headline the 2:4-sparse tensor figure, exactly twice the dense one; every
number here is the dense one (the sparse headline halved where the sheet gives only that). A
dtype a GPU has no tensor path for (V100 and T4 have no TF32 or BF16) has no entry: MFU then
uses the measured GEMM peak alone. fp16 and bf16 are tensor-core figures with FP32 accumulate
(what PyTorch's AMP runs); fp32 is the non-tensor CUDA-core figure. Boost clocks throughout.
Pure data and a regex match: no torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PeakRow:
    """One GPU: the name pattern it is matched by, its dense peaks and where they come from."""

    gpu: str
    pattern: str  # matched case-insensitively anywhere in torch.cuda.get_device_name()
    tflops: dict[str, float]  # dtype -> dense TFLOP/s
    source: str


# Ordered most specific first: "A100" must not match "A10", "H100 PCIe" not the SXM row.
PEAKS: tuple[PeakRow, ...] = (
    PeakRow(
        gpu="B200",
        pattern=r"\bB200\b",
        tflops={"fp32": 75.0, "tf32": 1125.0, "fp16": 2250.0, "bf16": 2250.0},
        source="NVIDIA HGX B200 datasheet (2024): eight-GPU sparse figures / 8 / 2",
    ),
    PeakRow(
        gpu="H200 SXM",
        pattern=r"\bH200\b(?!.*\bNVL\b)",
        tflops={"fp32": 67.0, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4},
        source="NVIDIA H200 Tensor Core GPU datasheet (2024), SXM: sparse figures / 2",
    ),
    PeakRow(
        gpu="H100 PCIe",
        pattern=r"\bH100\b.*\bPCIe\b",
        tflops={"fp32": 51.2, "tf32": 378.0, "fp16": 756.0, "bf16": 756.0},
        source="NVIDIA H100 Tensor Core GPU datasheet (2023), PCIe: sparse figures / 2",
    ),
    PeakRow(
        gpu="H100 SXM",
        pattern=r"\bH100\b(?!.*\b(PCIe|NVL)\b)",
        tflops={"fp32": 67.0, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4},
        source="NVIDIA H100 Tensor Core GPU datasheet (2023), SXM: sparse figures / 2",
    ),
    PeakRow(
        gpu="A100",
        pattern=r"\bA100\b",
        tflops={"fp32": 19.5, "tf32": 156.0, "fp16": 312.0, "bf16": 312.0},
        source="NVIDIA A100 Tensor Core GPU datasheet (2021): dense figures, SXM and PCIe",
    ),
    PeakRow(
        gpu="A10",
        pattern=r"\bA10\b",
        tflops={"fp32": 31.2, "tf32": 62.5, "fp16": 125.0, "bf16": 125.0},
        source="NVIDIA A10 Tensor Core GPU datasheet (2021): sparse figures / 2",
    ),
    PeakRow(
        gpu="L40S",
        pattern=r"\bL40S\b",
        tflops={"fp32": 91.6, "tf32": 183.0, "fp16": 362.05, "bf16": 362.05},
        source="NVIDIA L40S datasheet (2023): sparse figures / 2",
    ),
    PeakRow(
        gpu="L4",
        pattern=r"\bL4\b",
        tflops={"fp32": 30.3, "tf32": 60.0, "fp16": 121.0, "bf16": 121.0},
        source="NVIDIA L4 Tensor Core GPU datasheet (2023): sparse figures / 2",
    ),
    PeakRow(
        gpu="V100 SXM2",
        pattern=r"\bV100\b.*\bSXM",
        tflops={"fp32": 15.7, "fp16": 125.0},
        source="NVIDIA Tesla V100 datasheet (2020), SXM2: no sparsity, no TF32 or BF16",
    ),
    PeakRow(
        gpu="V100 PCIe",
        pattern=r"\bV100\b",
        tflops={"fp32": 14.0, "fp16": 112.0},
        source="NVIDIA Tesla V100 datasheet (2020), PCIe: no sparsity, no TF32 or BF16",
    ),
    PeakRow(
        gpu="T4",
        pattern=r"\bT4\b",
        tflops={"fp32": 8.1, "fp16": 65.0},
        source="NVIDIA T4 datasheet (2019): mixed FP16/FP32, no sparsity, no TF32 or BF16",
    ),
    PeakRow(
        gpu="GeForce RTX 4090",
        pattern=r"\bRTX 4090\b(?! (D|Laptop)\b)",  # the 4090 D and the laptop part are others
        tflops={"fp32": 82.6, "tf32": 82.6, "fp16": 165.2, "bf16": 165.2},
        source="NVIDIA Ada GPU architecture whitepaper v2.1, Table 2: dense, FP32 accumulate",
    ),
    PeakRow(
        gpu="GeForce RTX 3090",
        pattern=r"\bRTX 3090\b(?! Ti)",
        tflops={"fp32": 35.6, "tf32": 35.6, "fp16": 71.0, "bf16": 71.0},
        source="NVIDIA Ampere GA102 architecture whitepaper v2, Table 9: dense, FP32 accumulate",
    ),
)


def table_peak(device_name: str | None, dtype: str) -> tuple[PeakRow, float] | None:
    """The first row whose pattern matches `device_name` and its dense peak in `dtype`; None
    when the device is unknown or that GPU has no figure in that dtype."""
    if not device_name:
        return None
    for row in PEAKS:
        if re.search(row.pattern, device_name, flags=re.IGNORECASE):
            peak = row.tflops.get(dtype)
            return None if peak is None else (row, peak)
    return None
