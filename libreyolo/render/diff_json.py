"""A ProfileDiff as a JSON-ready dict: compare's `changes` key. Stdlib only, pure.

A value a side does not have is `null` on that side only; a row on one side only carries its
`status` (`new`, `gone`) so a reader never has to infer it from nulls. A `changed` row's
`matched_by` says whether it matched by (normalised) name or, for kernels, was paired by its
launching op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.document.json_value import JsonObject

if TYPE_CHECKING:
    from libreyolo.analysis.diff import PhaseChange, ProfileDiff, RowChange, TableDiff

DIGITS_MS = 4  # per-step times: 0.1 us, finer than any stored duration divided by a few steps
DIGITS_COUNT = 2  # per-step counts
DIGITS_SHARE = 4


def _r(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _phase(row: PhaseChange, has_gpu: bool) -> JsonObject:
    out: JsonObject = {
        "phase": row.phase,
        "wall_ms": [_r(row.wall_ms_before, DIGITS_MS), _r(row.wall_ms_after, DIGITS_MS)],
        "wall_change_ms": _r(row.wall_change_ms, DIGITS_MS),
        "share_of_change": _r(row.share_of_change, DIGITS_SHARE),
        "significant": row.significant,
        "significance": row.significance,
    }
    if has_gpu:  # CPU-only comparisons have no GPU time to report, not a GPU time of null
        out["gpu_ms"] = [_r(row.gpu_ms_before, DIGITS_MS), _r(row.gpu_ms_after, DIGITS_MS)]
        out["gpu_change_ms"] = _r(row.gpu_change_ms, DIGITS_MS)
    return out


def _row(row: RowChange) -> JsonObject:
    out: JsonObject = {
        "name": row.name,
        "status": row.status,
        "ms": [_r(row.ms_before, DIGITS_MS), _r(row.ms_after, DIGITS_MS)],
        "change_ms": _r(row.change_ms, DIGITS_MS),
        "calls": [_r(row.calls_before, DIGITS_COUNT), _r(row.calls_after, DIGITS_COUNT)],
        "num_merged": list(row.num_merged),
    }
    if row.status == "changed":  # a row on one side only was matched by nothing
        out["matched_by"] = row.matched_by
    return out


def _table(table: TableDiff) -> JsonObject:
    return {
        "changed": [_row(r) for r in table.changed],
        "new": [_row(r) for r in table.new],
        "gone": [_row(r) for r in table.gone],
        "num_matched": table.num_matched,
        "num_new": table.num_new,
        "num_gone": table.num_gone,
    }


def diff_json(diff: ProfileDiff) -> JsonObject:
    """The per-step changes of compare, keyed like the text sections; `kernels` null on CPU."""
    return {
        "step_ms": [_r(diff.step_ms_before, DIGITS_MS), _r(diff.step_ms_after, DIGITS_MS)],
        "total_change_ms": _r(diff.total_change_ms, DIGITS_MS),
        "total_from": diff.total_from,
        "phase_change_ms": _r(diff.phase_change_ms, DIGITS_MS),
        "has_gpu": diff.has_gpu,
        "phases": [_phase(row, diff.has_gpu) for row in diff.phases],
        "op_time": diff.op_time,
        "ops": _table(diff.ops),
        "kernels": _table(diff.kernels) if diff.kernels is not None else None,
        "kernel_rule": diff.kernel_rule,
    }
