"""Name tables: kernel categories and tensor-core flags against real names, phases, CUDA APIs."""

from __future__ import annotations

from pathlib import Path

import pytest

from libreyolo.kineto import classify
from tests.kineto.conftest import A100, B200, H100, V100, analysed

KERNEL_NAMES = Path(__file__).resolve().parents[1] / "data" / "kernel_names.tsv"


def _rows() -> list[tuple[str, bool, str]]:
    lines = KERNEL_NAMES.read_text(encoding="utf-8").splitlines()
    rows = [line.split("\t", 2) for line in lines if line and not line.startswith("#")]
    assert rows[0] == ["category", "tensor_core", "name"]
    return [(category, flag == "yes", name) for category, flag, name in rows[1:]]


ROWS = _rows()


@pytest.mark.parametrize(("category", "tensor_core", "name"), ROWS, ids=lambda v: str(v)[:40])
def test_real_kernel_names_get_their_category_and_tensor_core_flag(
    category: str, tensor_core: bool, name: str
) -> None:
    assert classify.classify_kernel(name) == category
    assert classify.uses_tensor_cores(name, category, compute_major=9) is tensor_core


def test_the_name_file_covers_every_category() -> None:
    categories = {name for name, _ in classify.KERNEL_CATEGORIES} | {classify.OTHER}
    assert {category for category, _, _ in ROWS} == categories
    assert len(ROWS) >= 40


def test_every_name_in_the_file_occurs_in_a_gpu_fixture() -> None:
    # The file claims real names: one copied wrong would test a kernel no GPU ever ran.
    seen = {kernel.name for trace in (A100, B200, H100, V100) for kernel in analysed(trace).kernels}
    assert [name for _, _, name in ROWS if name not in seen] == []


@pytest.mark.parametrize(("major", "expected"), [(7, False), (8, True), (10, True), (None, True)])
def test_attention_runs_on_tensor_cores_from_sm80_or_when_unknown(
    major: int | None, expected: bool
) -> None:
    name = "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64>>"
    assert classify.uses_tensor_cores(name, classify.ATTENTION, major) is expected


@pytest.mark.parametrize(
    "name",
    [
        "void at::native::multi_tensor_apply_kernel<TensorListMetadata<2>>",
        "void at::native::vectorized_elementwise_kernel<4, pow_tensor_scalar_kernel>",
        "volta_sgemm_128x64_nn",
        "void at::native::vectorized_elementwise_kernel<4, ConvertFunctor<float>>",
    ],
)
def test_no_tensor_core_from_a_bare_tensor_substring(name: str) -> None:
    assert not classify.is_tensor_core_name(name)


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("void at::native::vectorized_elementwise_kernel<4, ConvertFunctor<float>>", "elementwise"),
        ("void at::native::conv_depthwise2d_forward_kernel<float>", "gemm / conv"),
        ("void at::native::upsample_nearest2d_out_frame<float>", "layout / copy"),
        ("void at::native::batch_norm_collect_statistics_kernel<float>", "norm"),
        ("kernel_without_any_known_word", "other"),
    ],
)
def test_synthetic_names_follow_purpose_rules(name: str, category: str) -> None:
    assert classify.classify_kernel(name) == category


@pytest.mark.parametrize(
    ("label", "phase"),
    [
        ("step/dataload", "dataload"),
        ("step/to_device", "to_device"),
        ("step/postprocess", "postprocess"),
        ("## forward ##", "forward"),
        ("## backward ##", "backward"),
        ("## optimizer ##", "optimizer"),
        ("Optimizer.step#SGD.step", "optimizer"),
        ("Optimizer.zero_grad#SGD.zero_grad", "optimizer"),
        ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "dataload"),
        ("DistributedDataParallel.forward", "forward"),
        ("ProfilerStep#4", None),
        ("nccl:all_reduce", None),
        ("aten::add", None),
        ("my step/forward", None),
    ],
)
def test_phase_labels(label: str, phase: str | None) -> None:
    assert classify.classify_phase(label) == phase


def test_phases_sort_in_report_order() -> None:
    names = ["unphased", "optimizer", "zeta", "backward", "dataload", "forward", "alpha"]
    assert sorted(names, key=classify.phase_rank) == [
        "dataload", "forward", "backward", "optimizer", "alpha", "zeta", "unphased"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "api"),
    [
        ("cudaLaunchKernel", "cudaLaunchKernel"),
        ("cudaLaunchKernel_v7000", "cudaLaunchKernel"),
        ("cudaLaunchKernelExC", "cudaLaunchKernelExC"),
        ("cudaLaunchKernelExC_v11060", "cudaLaunchKernelExC"),
        ("cuLaunchKernel", "cuLaunchKernel"),
        ("cuLaunchKernelEx", "cuLaunchKernelEx"),
        ("cudaGraphLaunch", "cudaGraphLaunch"),
        ("cudaLaunchHostFunc", None),
        ("cudaMemcpyAsync", None),
    ],
)
def test_launch_apis_match_by_exact_name_and_suffix(name: str, api: str | None) -> None:
    assert classify.launch_api(name) == api


def test_memcpy_and_malloc_apis() -> None:
    assert classify.is_memcpy_api("cudaMemcpyAsync") and classify.is_memcpy_api("cuMemsetD32Async")
    assert not classify.is_memcpy_api("cudaMalloc")
    for name in ("cudaMalloc", "cudaFree", "cuMemAlloc_v2", "cuMemFree_v2"):
        assert classify.is_malloc_api(name)
    for name in ("cudaMallocAsync", "cudaFreeHost", "cudaMemcpy"):
        assert not classify.is_malloc_api(name)
