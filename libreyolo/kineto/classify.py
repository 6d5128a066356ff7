"""Name tables: kernel categories, tensor-core kernels, phase labels and CUDA API families.

Role: every rule that maps an event *name* to a class lives here as data, tuples of
(class, compiled regex) where the first match wins, so the rules can be read in one place and are
tested against real kernel names (tests/data/kernel_names.tsv). Must not: read traces, compute
times, print, or import torch/numpy.

Kernel categories are checked by purpose before library: `cudnn` appears in layout
(`nchwToNhwcKernel`) and BatchNorm (`bn_fw_*`) kernels as well as in convolutions, so the bare
library names come last. GEMM/conv comes before reduction so that split-K and wgrad helper
reductions (`splitKreduce_kernel`, `reduce_wgrad_nchw_helper`) stay with their GEMM/conv.
"""

from __future__ import annotations

import re

from libreyolo.document.phases import (
    BACKWARD,
    DATALOAD,
    FORWARD,
    POSTPROCESS,
    PREPROCESS,
    TO_DEVICE,
    UNPHASED,
)
from libreyolo.document.phases import OPTIMIZER as OPTIMIZER_PHASE

COMMUNICATION = "communication"
ATTENTION = "attention"
LAYOUT = "layout / copy"
NORM = "norm"
GEMM = "gemm / conv"
REDUCTION = "reduction"
OPTIMIZER = "optimizer"
ELEMENTWISE = "elementwise"
OTHER = "other"
MEMCPY = "memcpy"  # not a kernel class: the row built from gpu_memcpy and gpu_memset events
# Every category name a profile can hold (`kernels --category` checks its argument against it).
CATEGORY_NAMES = (
    COMMUNICATION,
    ATTENTION,
    LAYOUT,
    NORM,
    GEMM,
    REDUCTION,
    OPTIMIZER,
    ELEMENTWISE,
    OTHER,
    MEMCPY,
)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# `(?<![a-z])` keeps words out of CamelCase template arguments (cutlass' `NoPermute`).
KERNEL_CATEGORIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (COMMUNICATION, _rx(r"nccl|multimem_all_reduce|cross_device_reduce|custom_all_reduce")),
    (ATTENTION, _rx(r"flash_fwd|flash_bwd|flash_attn|fmha|paged_attention|attention_kernel")),
    (
        LAYOUT,
        _rx(
            r"nchwtonhwc|nhwctonchw|catarray|concat|contiguous|copy_kernel|copy_page|_copy"
            r"|(?<![a-z])(?:transpose|permute|gather|scatter)|reshape_and_cache|im2col|col2im"
            r"|upsample"
        ),
    ),
    (NORM, _rx(r"bn_fw|bn_bw|batch_?norm|(?:layer|group|instance|rms)_?norm")),
    (
        GEMM,
        _rx(
            r"gemm|gemv|xmma|nvjet|cutlass_|cutlass::(?:kernel|gemm|conv|device_kernel)|bmm_"
            r"|implicit_convolve|fprop|dgrad|wgrad|winograd|splitk|scudnn|\d+cudnn|conv(?!ert)"
        ),
    ),
    # Pooling (YOLO's SPPF max-pools) is a windowed max/mean: a reduction.
    (REDUCTION, _rx(r"softmax|welford|reduce|triton_red|triton_per|cumsum|topk|pool")),
    (OPTIMIZER, _rx(r"multi_tensor_apply|_foreach_|fused_adam|fused_sgd")),
    (
        ELEMENTWISE,
        _rx(
            r"elementwise|pointwise|vectorized|unrolled|activation|silu|gelu|relu|sigmoid|tanh"
            r"|unary|binary|clamp|fill|arange|quant|rotary|act_and_mul|dropout|triton_poi"
        ),
    ),
    # Library names last: a cuDNN/cuBLAS kernel of no known purpose is part of a GEMM or conv.
    (GEMM, _rx(r"cudnn|cublas|cask_")),
)

# Tensor-core instruction families in kernel names. Never a bare `tensor`: it matches
# `multi_tensor_apply_kernel` and `pow_tensor_scalar`.
TENSOR_CORE = _rx(
    r"xmma|gmma|wgmma|nvjet|tensorop|s1688|s16816|h884|h1688|hmma|imma|i8816|i16832|16816|16832"
    r"|884gemm|1688gemm|s884|c1688|wmma|bmm_.*mx"
)

# Fused attention kernels run on tensor cores from Ampere (sm80) on; their names carry no marker.
ATTENTION_TENSOR_CORE_MIN_MAJOR = 8


def classify_kernel(name: str) -> str:
    """The category of a kernel name: the first rule that matches, else `other`."""
    for category, pattern in KERNEL_CATEGORIES:
        if pattern.search(name):
            return category
    return OTHER


def is_tensor_core_name(name: str) -> bool:
    """Whether a kernel name carries a tensor-core instruction family."""
    return TENSOR_CORE.search(name) is not None


def uses_tensor_cores(name: str, category: str, compute_major: int | None) -> bool:
    """Whether a kernel runs on tensor cores: by name, or attention on sm80+ (or unknown arch)."""
    if category == ATTENTION:
        return compute_major is None or compute_major >= ATTENTION_TENSOR_CORE_MIN_MAJOR
    return is_tensor_core_name(name)


# Phase ranges: our collector's `step/<phase>` annotations, then labels that PyTorch, DDP and
# common training loops emit, matched at the start of the label. A match's group 1, when
# present, is the phase name.
PHASE_LABELS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("", re.compile(r"step/(\w+)$")),
    (FORWARD, re.compile(r"(?:## forward ##|DistributedDataParallel\.forward)$")),
    (BACKWARD, re.compile(r"## backward ##$")),
    (OPTIMIZER_PHASE, re.compile(r"## optimizer ##$|Optimizer\.(?:step|zero_grad)#")),
    (DATALOAD, re.compile(r"enumerate\(DataLoader\)#")),
)

# Report order of phases; phases not listed follow in name order, `unphased` last.
PHASE_ORDER = (DATALOAD, TO_DEVICE, PREPROCESS, FORWARD, BACKWARD, POSTPROCESS)
PHASE_ORDER_LAST = (OPTIMIZER_PHASE,)


def classify_phase(label: str) -> str | None:
    """The phase a range label opens, or None when the label is not a phase."""
    for phase, pattern in PHASE_LABELS:
        match = pattern.match(label)
        if match:
            return phase or match.group(1)
    return None


def phase_rank(phase: str) -> tuple[int, str]:
    """Sort key that puts phases in report order."""
    if phase in PHASE_ORDER:
        return (PHASE_ORDER.index(phase), "")
    if phase in PHASE_ORDER_LAST:
        return (len(PHASE_ORDER), "")
    return (len(PHASE_ORDER) + (2 if phase == UNPHASED else 1), phase)


# CUDA API families, runtime and driver. Exact API names, optionally with a version suffix
# (`cuLaunchKernel_ptsz`, `cuMemAlloc_v2`), so `cudaLaunchKernel` never swallows
# `cudaLaunchKernelExC` and `cudaMalloc` never counts the stream-ordered `cudaMallocAsync`.
LAUNCH_API = re.compile(
    r"(cudaLaunchKernel|cudaLaunchKernelExC|cuLaunchKernel|cuLaunchKernelEx"
    r"|cudaGraphLaunch|cuGraphLaunch)(?:_\w+)?"
)
MEMCPY_API = re.compile(r"(?:cuda|cu)Mem(?:cpy|set)\w*")
MALLOC_API = re.compile(r"(?:cudaMalloc|cudaFree|cuMemAlloc|cuMemFree)(?:_\w+)?")


def launch_api(name: str) -> str | None:
    """The launch API a runtime/driver call name belongs to, without suffix, or None."""
    match = LAUNCH_API.fullmatch(name)
    return match.group(1) if match else None


def is_memcpy_api(name: str) -> bool:
    """Whether a runtime/driver call copies or sets memory."""
    return MEMCPY_API.fullmatch(name) is not None


def is_malloc_api(name: str) -> bool:
    """Whether a runtime/driver call allocates or frees device memory."""
    return MALLOC_API.fullmatch(name) is not None
