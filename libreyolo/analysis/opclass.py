"""CPU op categories (for CPU-only profiles): what the CPU spends its op self time on.

Purpose first, as for kernels: normalisation and layout before the gemm rule. Pure data + one
function; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from libreyolo.document.model import OpStat

# (category, pattern on the lower-cased op name); the first match wins.
OP_CATEGORIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("norm", re.compile(r"batch_norm|layer_norm|group_norm|instance_norm|rms_norm|native_norm")),
    (
        "layout / copy",
        re.compile(
            r"\bcat\b|::cat|copy|contiguous|permute|transpose|::to\b|"
            r"_to_copy|clone|stack|index|gather|scatter|pad|view|reshape"
        ),
    ),
    ("gemm / conv", re.compile(r"conv|mm\b|matmul|linear|addmm|bmm|baddbmm|einsum")),
    ("reduction", re.compile(r"sum|mean|softmax|max|min|topk|sort|norm|var|std|nms")),
    ("optimizer", re.compile(r"_foreach_|optimizer")),
    (
        "elementwise",
        re.compile(
            r"add|mul|div|sub|silu|sigmoid|relu|gelu|exp|log|sqrt|pow|"
            r"clamp|where|fill|zero|neg|abs|tanh|hardswish|threshold"
        ),
    ),
)


def op_category(name: str) -> str:
    """The category of one CPU op name ("other" when no rule matches)."""
    lowered = name.lower()
    for category, pattern in OP_CATEGORIES:
        if pattern.search(lowered):
            return category
    return "other"


def op_category_ms(ops: Iterable[OpStat]) -> dict[str, float]:
    """Self CPU ms per category (inclusive ms for v1 files, which stored no self time)."""
    totals: dict[str, float] = {}
    for op in ops:
        ms = op.self_ms if op.self_ms is not None else op.total_ms
        category = op_category(op.name)
        totals[category] = totals.get(category, 0.0) + ms
    return totals
