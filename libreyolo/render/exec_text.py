"""The summary's `exec` line: how a non-eager run ran and what compiling, exporting or capturing
it cost.

Role: one line for `summary` (and the HTML report's "How it ran"), from the profile's
`execution` record: `exec  compile (default, inductor) · compile 41.0 s · 1 graph, 0 breaks ·
recompiles warmup 1, window 0`, `exec  onnxruntime (CPUExecutionProvider, opset 17) · export
1.1 s (cached) · session 0.3 s`, `exec  cudagraphs · capture 0.2 s`. Eager, and files that
predate the record, print nothing.

Must not: judge the numbers (the verdict does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a type only: building the document's classes costs `get` its start-up
    from libreyolo.document.model import Agreement, Execution


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 'es' if word.endswith('h') else 's'}"


def exec_facts(execution: Execution) -> str:
    """The mode and its costs, `·`-separated (the line without its `exec` label)."""
    parts = [execution.name]
    if execution.compiled is not None:
        c = execution.compiled
        parts = [
            f"{execution.name} ({c.mode}, {c.backend}{', dynamic' if c.dynamic else ''})",
            f"compile {c.compile_s:.1f} s",
            f"{_plural(c.num_graphs, 'graph')}, {_plural(c.graph_breaks, 'break')}",
            f"recompiles warmup {c.warmup_recompiles}, window {c.window_recompiles}",
        ]
    if execution.exported is not None:
        e = execution.exported
        parts = [
            f"{execution.name} ({e.provider}, opset {e.opset})",
            f"export {e.export_s:.1f} s{' (cached)' if e.cached else ''}",
            f"session {e.session_s:.1f} s",
        ]
    if execution.graph is not None:
        g = execution.graph
        captures = f" ({g.num_captures} captures)" if g.num_captures != 1 else ""
        parts.append(f"capture {g.capture_s:.1f} s{captures}")
    if execution.channels_last:
        parts.append("channels-last")
    return " · ".join(parts)


def exec_lines(execution: Execution | None) -> list[str]:
    """The summary's `exec` line, only for a non-eager run, and its `agree` line where the run
    was checked against eager fp32 (a non-eager run, or `--half`)."""
    if execution is None:
        return []
    lines = [] if execution.name == "eager" else [f"exec     {exec_facts(execution)}"]
    if execution.agreement is not None:
        lines.append(f"agree    {agreement_facts(execution.agreement)}")
    return lines


def agreement_facts(agreement: Agreement) -> str:
    """`with eager fp32 on 1 image: recall 1.000, precision 1.000 (260 boxes, eager's 260; 80
    ties at equal scores left out) · max |diff| of the outputs 6.1e-05`, or why there was
    nothing to agree on."""
    a = agreement
    images = f"{a.num_images} image{'s' if a.num_images != 1 else ''}"
    head = f"with {a.reference} on {images}: "
    if a.note is not None:
        head += a.note
    else:
        recall = "-" if a.recall is None else f"{a.recall:.3f}"
        precision = "-" if a.precision is None else f"{a.precision:.3f}"
        ties = f"; {a.ties} ties at equal scores left out" if a.ties else ""
        head += (
            f"recall {recall}, precision {precision} ({a.boxes} boxes, eager's "
            f"{a.reference_boxes}{ties})"
        )
    diff = (
        "unknown (the outputs differ in shape)" if a.max_abs_diff is None else f"{a.max_abs_diff:g}"
    )
    return f"{head} · max |diff| of the outputs {diff}"
