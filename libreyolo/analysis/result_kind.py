"""The closed set of results a command prints, each with a text view and a JSON view.

A result class names its kind in a `result_kind` class attribute; `render/text.py` and
`render/jsondoc.py` pick their view by it (tests/render/test_result_kinds.py checks that every
kind has both). It is not a profile's kind (`Profile.kind`, train or infer).

Must not: import anything beyond the standard library (every reader imports it at start-up).
"""

from __future__ import annotations

from enum import StrEnum


class ResultKind(StrEnum):
    """What a result is, as the renderers dispatch on it."""

    SUMMARY = "summary"
    METRIC = "metric"
    METRIC_LIST = "metric-list"
    KERNELS = "kernels"
    OPS = "ops"
    PHASES = "phases"
    MEMORY = "memory"  # a training step's tensor memory by category
    OOM = "oom"  # a CUDA memory snapshot's out-of-memory moment
    COMPARE = "compare"
    WHAT_IF = "what-if"
    SWEEP = "sweep"
    SWEEP_COMPARE = "sweep-compare"
    OUTCOME = "outcome"  # what `run` or `infer` measured, and where it wrote it
    CONFIG = "config"  # `run --print-config`
    REPORT = "report"  # the page `report` wrote
    SUBCOMMANDS = "subcommands"  # `libreyolo profile` alone
    LOGGED = "logged"  # what `log` sent to MLflow or TensorBoard


def kind_of(result: object) -> ResultKind | None:
    """The kind `result` declares; None for an object that is not a result (or names a kind
    outside the enum), which the renderers refuse."""
    kind = getattr(result, "result_kind", None)
    return kind if isinstance(kind, ResultKind) else None
