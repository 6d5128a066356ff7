"""Kernel-name normalisation against the kernel names of the four GPU fixture traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from libreyolo.analysis.diff import diff_profiles
from libreyolo.analysis.kernel_names import RULE, normalise
from libreyolo.cli.sources import open_profile
from tests.cli.test_readers import GPU_FILES

XMMA_FPROP = (
    "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16"
    "_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer"
)
CUTLASS_GEMM = (
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>"
    "(cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4::Params)"
)
BN_BW = (
    "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float, float, "
    "float, cudnnTensorStruct, float const*, cudnnTensorStruct, float const*)"
)
ADD = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3>)"
)


@pytest.mark.parametrize("name", GPU_FILES)
def test_normalise_matches_every_kernel_of_a_fixture_with_itself(name, gpu_traces: Path) -> None:
    profile = open_profile(str(gpu_traces / name))
    diff = diff_profiles(profile, profile, top=1000)
    assert diff.kernels is not None
    assert diff.kernels.num_new == diff.kernels.num_gone == 0
    assert diff.kernels.num_matched == len({normalise(k.name) for k in profile.trace.kernels})
    assert all(row.change_ms == 0 for row in diff.kernels.changed + diff.ops.changed)
    assert all(row.wall_change_ms in (0, None) for row in diff.phases)
    assert all(normalise(k.name) for k in profile.trace.kernels)  # no name normalises away


@pytest.mark.parametrize(
    ("name", "variant"),
    [
        (XMMA_FPROP, XMMA_FPROP.replace("tilesize128x128x16_stage4", "tilesize64x64x32_stage5")),
        (XMMA_FPROP, XMMA_FPROP.replace("sm80_", "sm90_")),
        (CUTLASS_GEMM, CUTLASS_GEMM.replace("256x64_16x4", "64x64_16x6")),
        (CUTLASS_GEMM, CUTLASS_GEMM.replace("cutlass_80_", "cutlass_90_")),
        (BN_BW, BN_BW.replace("float2, 128", "float2, 32")),
        ("ampere_sgemm_32x128_nt", "volta_sgemm_64x64_nt"),
        (
            "cudnn_infer_ampere_scudnn_128x64_relu_xregs_large_nn_v1",
            "cudnn_infer_turing_scudnn_64x64_relu_xregs_large_nn_v1",
        ),
        ("triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul_3"),
        ("fused_kernel_9f3a61c2e0", "fused_kernel_0d1e2f3a4b"),
    ],
)
def test_normalise_merges_variants_of_one_kernel(name: str, variant: str) -> None:
    assert name != variant
    assert normalise(name) == normalise(variant)


@pytest.mark.parametrize(
    ("name", "other"),
    [
        (XMMA_FPROP, XMMA_FPROP.replace("fprop", "dgrad")),  # forward vs backward conv
        (XMMA_FPROP, XMMA_FPROP.replace("fprop_implicit_gemm", "gemm")),  # conv vs gemm
        (CUTLASS_GEMM, CUTLASS_GEMM.replace("gemm", "fprop_optimized_tf32")),  # gemm vs conv
        (CUTLASS_GEMM, CUTLASS_GEMM.replace("_nn_", "_nt_")),  # another layout
        (ADD, ADD.replace("CUDAFunctor_add", "MulFunctor")),  # another elementwise op
        (BN_BW, BN_BW.replace("bn_bw", "bn_fw")),
        ("ampere_sgemm_32x128_nt", "ampere_sgemm_32x128_tn"),
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", "ncclKernel_Broadcast_RING_LL"),
    ],
)
def test_normalise_keeps_different_kernels_apart(name: str, other: str) -> None:
    assert normalise(name) != normalise(other)


def test_normalise_removes_return_type_arguments_and_template_values() -> None:
    assert normalise(BN_BW) == "cudnn::bn_bw_1C11_kernel_new<float, float, float2>"
    assert normalise(CUTLASS_GEMM) == "cutlass::Kernel<cutlass_tensorop_gemm_nn_align4>"


def test_rule_is_one_line() -> None:
    assert RULE and "\n" not in RULE
