"""Kernel-name normalisation: one name for the variants of a kernel, to match kernels across runs.

Role: a change of input size, batch or GPU makes cuDNN/cuBLAS pick another tile shape, stage
count or architecture build of the same kernel, so raw names rarely match between two profiles.
`normalise` removes what varies between such variants (the rules below, as data, applied in
order) and keeps what makes kernels different: the function, its namespace, the type and functor
template arguments (add vs mul elementwise kernels), the operation (gemm, fprop, dgrad, wgrad)
and the layout (nn, nt). Template *values* (block sizes, unroll counts) go, not the template
arguments as a whole: without the functor every at::native elementwise kernel, and without the
inner kernel every cutlass kernel, would be one row. Pure: no I/O, no torch.
"""

from __future__ import annotations

import re

RULE = (
    "kernels match when their names agree after removing return types, argument lists, "
    "numeric template values, tile/warp/stage shapes, architecture tags and hash suffixes; "
    "kernels still unmatched are then paired by the aten op that launched them, one gone with "
    "one new of the same op, largest first"
)

_REPEAT = 8  # nesting depth handled by repeated rules: deeper than any kernel name seen


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# (pattern, replacement, why); order matters: argument lists go before template values are read.
RULES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (_rx(r"^void\s+"), "", "the return type is the same for every kernel"),
    (_rx(r"\(anonymous namespace\)::"), "", "an anonymous namespace is not a name"),
    (_rx(r"\([^()]*\)"), "", "argument lists, innermost first (lambdas and operator() too)"),
    (_rx(r"L[a-z]\d+E"), "L_E", "integer template values in mangled names (GemmShapeILi128E)"),
    (
        _rx(r"(?<=[<,])\s*-?\d+[A-Za-z]*\s*(?=[,>])|(?<=[<,])\s*(?:true|false)\s*(?=[,>])"),
        "",
        "numeric and boolean template values: block sizes, unroll and vector widths",
    ),
    (_rx(r",(?=\s*[,>])"), "", "the commas those values leave"),
    (_rx(r"<\s*,\s*"), "<", "a leading comma they leave"),
    (_rx(r"\s*<\s*>"), "", "a template whose arguments were all values"),
    (_rx(r"\d+(?:x\d+)+"), "", "tile, warp, cluster and MMA shapes (128x128x32, 16x8x8)"),
    (_rx(r"(?<=stage)\d+|(?<=_s)\d+(?=_)"), "", "pipeline stage counts (stage4, _s3_)"),
    (_rx(r"(?<![A-Za-z0-9])s\d{3,5}(?=gemm|fprop|dgrad|wgrad)"), "", "MMA instruction shapes"),
    (
        _rx(r"(?<![A-Za-z0-9])sm_?\d{2,3}[a-z]?(?=_|$)|(?<=[a-z])Sm\d{2,3}[a-z]?(?=[A-Z])"),
        "",
        "architecture builds (sm80_, _sm100f, fmhaSm100a)",
    ),
    (
        _rx(r"(?i)(?<![a-z])(?:maxwell|pascal|volta|turing|ampere|hopper|blackwell)_"),
        "",
        "architecture names in cuDNN/cuBLAS kernels (ampere_sgemm)",
    ),
    (_rx(r"(?<=cutlass)_\d{2,3}(?=_)"), "", "cutlass architecture tags (cutlass_80_)"),
    (_rx(r"_(?=[0-9a-f]*\d)[0-9a-f]{8,}\b|0x[0-9a-fA-F]+"), "", "hash and address suffixes"),
    (_rx(r"_\d+$"), "", "compiled-kernel index suffixes (triton_poi_fused_add_0)"),
    (_rx(r"_{2,}"), "_", "the underscores the removals leave"),
    (_rx(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])"), "", "leading and trailing underscores"),
    (_rx(r"\s+"), " ", "spacing"),
)


def normalise(name: str) -> str:
    """`name` with what differs between variants of one kernel removed (module docstring)."""
    text = name.strip()
    for pattern, replacement, _ in RULES:
        for _ in range(_REPEAT):  # nested groups and adjacent matches peel one layer a pass
            text, count = pattern.subn(replacement, text)
            if not count:
                break
    return text.strip() or name
