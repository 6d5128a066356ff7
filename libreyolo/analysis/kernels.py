"""The kernel table: filter, sort and cut the per-kernel rows of a profile. Pure."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

import msgspec

from libreyolo.analysis.metrics import per_step_divisor
from libreyolo.analysis.phases import require_phase
from libreyolo.analysis.result_kind import ResultKind
from libreyolo.document.model import Profile
from libreyolo.errors import UnknownNameError

SortKey = Literal["time", "count", "name"]
# libreyolo 1.6.0's friendly labels: first substring hit on the lower-cased name wins.
_LABELS = (
    ("ncclkernel_allreduce", "nccl all-reduce"),
    ("ncclkernel_broadcast", "nccl broadcast"),
    ("ncclkernel_allgather", "nccl all-gather"),
    ("ncclkernel_reducescatter", "nccl reduce-scatter"),
    ("all_reduce", "all-reduce"),
    ("bn_bw", "cudnn batchnorm (bwd)"),
    ("bn_fw", "cudnn batchnorm (fwd)"),
    ("nchwtonhwc", "layout nchw->nhwc"),
    ("nhwctonchw", "layout nhwc->nchw"),
    ("implicitgemm", "cutlass conv (implicit gemm)"),
    ("implicit_convolve", "implicit conv"),
    ("wgrad", "conv wgrad"),
    ("dgrad", "conv dgrad"),
    ("cgemm", "gemm"),
    ("sgemm", "gemm"),
    ("gemm", "gemm"),
    ("vectorized_elementwise", "elementwise"),
    ("elementwise", "elementwise"),
    ("softmax", "softmax"),
    ("reduce", "reduction"),
    ("catarray", "concat"),
)


_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
_CALL_ARGS = re.compile(r"\([^()]*\)")
_GENERIC = frozenset({"kernel", "Kernel", "device_kernel", "kernel_entry"})
LABEL_CHARS = 60


def _function_name(name: str) -> str:
    """`void ns::(anonymous namespace)::foo<T, U>(args)` -> `foo` (the demangled function)."""
    text = name
    for pattern in (_TEMPLATE_ARGS, _CALL_ARGS):
        previous = None
        while previous != text:  # strip nested groups from the inside out
            previous, text = text, pattern.sub("", text)
    words = text.split()
    parts = [p for p in (words[-1] if words else name).split("::") if p]
    if not parts:
        return name[:LABEL_CHARS]
    label = "::".join(parts[-2:]) if parts[-1] in _GENERIC and len(parts) > 1 else parts[-1]
    return label[:LABEL_CHARS]


def friendly_label(name: str) -> str:
    """A short human label for a kernel name (the full name stays in `name`)."""
    lowered = name.lower()
    return next((label for key, label in _LABELS if key in lowered), _function_name(name))


class KernelRow(msgspec.Struct, frozen=True):
    name: str
    label: str
    category: str
    tensor_core: bool
    ms_per_step: float
    share: float  # of the kernel time of the table's scope (all kernels, or the phase)
    num_per_step: float


class KernelTable(msgspec.Struct, frozen=True):
    result_kind: ClassVar[ResultKind] = ResultKind.KERNELS
    phase: str | None
    num_matched: int  # rows that passed the filters, before --top
    rows: tuple[KernelRow, ...]


def _check_category(category: str) -> None:
    from libreyolo.kineto.classify import CATEGORY_NAMES  # its regexes compile on import

    if not any(category.lower() in known for known in CATEGORY_NAMES):
        raise UnknownNameError(f"unknown category '{category}'. known: {', '.join(CATEGORY_NAMES)}")


def top_kernels(
    profile: Profile,
    *,
    top: int = 20,
    category: str | None = None,
    pattern: re.Pattern[str] | None = None,
    tensor_core_only: bool = False,
    sort: SortKey = "time",
    phase: str | None = None,
) -> KernelTable:
    """Kernel rows of the whole window or one phase, filtered, sorted and cut to `top`."""
    trace = profile.trace
    if phase is not None:
        require_phase(profile, phase)
    if category:
        _check_category(category)
    n = per_step_divisor(trace)
    scoped = []
    for kernel in trace.kernels if trace else []:
        stat = kernel.phases.get(phase) if phase is not None else kernel
        if stat is not None:
            scoped.append((kernel, stat.total_ms, stat.num_calls))
    total_ms = sum(ms for _, ms, _ in scoped) or 1.0
    rows = [
        KernelRow(
            kernel.name,
            friendly_label(kernel.name),
            kernel.category,
            kernel.tensor_core,
            ms / n,
            ms / total_ms,
            calls / n,
        )
        for kernel, ms, calls in scoped
    ]
    rows = [row for row in rows if _keep(row, category, pattern, tensor_core_only)]
    rows.sort(key=_SORTS[sort])
    return KernelTable(phase=phase, num_matched=len(rows), rows=tuple(rows[: max(top, 0)]))


def _keep(
    row: KernelRow, category: str | None, pattern: re.Pattern[str] | None, tensor_core_only: bool
) -> bool:
    if category and category.lower() not in row.category.lower():
        return False
    if pattern is not None and not (pattern.search(row.name) or pattern.search(row.label)):
        return False
    return row.tensor_core or not tensor_core_only


_SORTS = {
    "time": lambda row: (-row.ms_per_step, row.name),
    "count": lambda row: (-row.num_per_step, -row.ms_per_step, row.name),
    "name": lambda row: (row.label, row.name),
}
