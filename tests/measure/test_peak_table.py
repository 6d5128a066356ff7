"""The datasheet table: real `torch.cuda.get_device_name()` strings find their row (and
look-alike chips none), every figure is the dense one, and a dtype a GPU lacks has no peak."""

from __future__ import annotations

import pytest

from libreyolo.measure.peak_table import PEAKS, PeakRow, table_peak

# The names CUDA reports, and the row each must find (None: a different chip, no row).
NAMES = [
    ("NVIDIA A100-SXM4-80GB", "A100"),
    ("NVIDIA A100 80GB PCIe", "A100"),
    ("NVIDIA A100-PCIE-40GB", "A100"),
    ("NVIDIA A10", "A10"),
    ("NVIDIA A10G", None),  # AWS's A10G: another GA102 part with its own clocks
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA H100 NVL", None),
    ("NVIDIA H200", "H200 SXM"),
    ("NVIDIA H200 NVL", None),
    ("NVIDIA GH200 480GB", None),
    ("NVIDIA B200", "B200"),
    ("NVIDIA L4", "L4"),
    ("NVIDIA L40", None),
    ("NVIDIA L40S", "L40S"),
    ("Tesla V100-SXM2-32GB", "V100 SXM2"),
    ("Tesla V100-PCIE-16GB", "V100 PCIe"),
    ("Tesla T4", "T4"),
    ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
    ("NVIDIA GeForce RTX 4090 D", None),  # fewer SMs than the 4090
    ("NVIDIA GeForce RTX 4090 Laptop GPU", None),  # an AD103, not the desktop AD102
    ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090"),
    ("NVIDIA GeForce RTX 3090 Ti", None),
    ("AMD Instinct MI300X", None),
    ("", None),
]


@pytest.mark.parametrize(("name", "gpu"), NAMES, ids=[n or "empty" for n, _ in NAMES])
def test_a_cuda_device_name_finds_its_row(name: str, gpu: str | None) -> None:
    found = table_peak(name, "fp32")
    assert (None if found is None else found[0].gpu) == gpu


def test_no_name_has_no_row() -> None:
    assert table_peak(None, "fp16") is None


@pytest.mark.parametrize(
    ("name", "dtype"),
    [
        ("Tesla V100-SXM2-32GB", "bf16"),
        ("Tesla V100-SXM2-32GB", "tf32"),
        ("Tesla V100-PCIE-16GB", "bf16"),
        ("Tesla T4", "tf32"),
        ("Tesla T4", "bf16"),
        ("NVIDIA A100-SXM4-80GB", "fp8"),
    ],
)
def test_a_dtype_without_a_tensor_path_has_no_peak(name: str, dtype: str) -> None:
    assert table_peak(name, dtype) is None


@pytest.mark.parametrize(
    ("name", "dtype", "tflops"),
    [
        ("NVIDIA H200", "bf16", 989.4),  # the datasheet's 1,979 is 2:4 sparse
        ("NVIDIA H200", "tf32", 494.7),
        ("NVIDIA H100 80GB HBM3", "fp16", 989.4),
        ("NVIDIA H100 PCIe", "bf16", 756.0),
        ("NVIDIA A100-SXM4-80GB", "bf16", 312.0),
        ("NVIDIA A100 80GB PCIe", "tf32", 156.0),
        ("NVIDIA A100-SXM4-80GB", "fp32", 19.5),
        ("NVIDIA A10", "fp16", 125.0),
        ("NVIDIA L4", "fp16", 121.0),
        ("NVIDIA L40S", "bf16", 362.05),
        ("NVIDIA B200", "bf16", 2250.0),
        ("Tesla V100-SXM2-32GB", "fp16", 125.0),
        ("Tesla V100-PCIE-16GB", "fp16", 112.0),
        ("Tesla T4", "fp16", 65.0),
        ("NVIDIA GeForce RTX 4090", "fp16", 165.2),
        ("NVIDIA GeForce RTX 3090", "fp16", 71.0),
    ],
)
def test_the_figures_are_the_dense_ones(name: str, dtype: str, tflops: float) -> None:
    found = table_peak(name, dtype)
    assert found is not None
    assert found[1] == tflops


@pytest.mark.parametrize("row", PEAKS, ids=[row.gpu for row in PEAKS])
def test_every_row_has_a_source_and_fp16_at_least_fp32(row: PeakRow) -> None:
    assert row.source.strip()
    assert "datasheet" in row.source or "whitepaper" in row.source
    assert set(row.tflops) <= {"fp32", "tf32", "fp16", "bf16"}
    assert row.tflops["fp16"] >= row.tflops["fp32"] > 0
    if "tf32" in row.tflops:  # a tensor path: between FP32 and FP16
        assert row.tflops["fp32"] <= row.tflops["tf32"] <= row.tflops["fp16"]
    if "bf16" in row.tflops:
        assert row.tflops["bf16"] == row.tflops["fp16"]
