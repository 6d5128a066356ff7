"""The text lines of a ProfileDiff: compare's "what changed (per step)" section.

A value a side does not have prints as `?`; a row on one side only prints as `+ new` or
`- gone`. Names come from files and pass through `short_name`. Pure: no clock, environment or
filesystem.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.render.safe import safe_text, short_name
from libreyolo.render.units import fmt_count

if TYPE_CHECKING:
    from libreyolo.analysis.diff import PhaseChange, ProfileDiff, RowChange, TableDiff

DIFF_HEADER = "what changed (per step):"
SINGLE_WINDOW_HEADER = "what changed (per step; one window a side, so no significance calls):"
NAME_WIDTH = 14  # the phase column


def _ms(value: float | None) -> str:
    return "?" if value is None else f"{value:.3f}"


def _signed(value: float | None) -> str:
    return "?" if value is None else f"{value:+.3f}"


def _calls(value: float | None) -> str:
    return "?" if value is None else fmt_count(value)


def _pct(share: float) -> str:
    text = f"{share:.0%}"
    return "0%" if text == "-0%" else text  # a share that rounds to nothing has no sign


def _step_line(diff: ProfileDiff) -> str:
    how = " (sum of the phases)" if diff.total_from == "phases" else ""
    if diff.total_from == "step_ms" and diff.phase_change_ms is not None:
        how = f", phases {_signed(diff.phase_change_ms)} ms"
    return (
        f"  step  {_ms(diff.step_ms_before)} -> {_ms(diff.step_ms_after)} ms"
        f"  change {_signed(diff.total_change_ms)} ms{how}"
    )


def _phase_line(row: PhaseChange, has_gpu: bool) -> str:
    share = "" if row.share_of_change is None else f"  {_pct(row.share_of_change)} of the change"
    gpu = (
        f"  gpu {_ms(row.gpu_ms_before)} -> {_ms(row.gpu_ms_after)} ({_signed(row.gpu_change_ms)})"
        if has_gpu
        else ""
    )
    tag = {True: "  [significant]", False: "  [NOT significant]"}.get(
        row.significant,  # type: ignore[arg-type]
        "",  # no trials: the phase line carries no call, like every single-window number here
    )
    return (
        f"  {short_name(row.phase, NAME_WIDTH):<{NAME_WIDTH}} wall {_ms(row.wall_ms_before)} -> "
        f"{_ms(row.wall_ms_after)} ({_signed(row.wall_change_ms)}){share}{gpu}{tag}"
    )


def _merged(row: RowChange) -> str:
    before, after = row.num_merged
    return "" if max(before, after) <= 1 else f"  [{before} -> {after} names]"


def _row_lines(table: TableDiff) -> list[str]:
    lines = [
        f"  {_signed(r.change_ms)}  {_ms(r.ms_before)} -> {_ms(r.ms_after)} ms  "
        f"x{_calls(r.calls_before)} -> x{_calls(r.calls_after)}  {short_name(r.name)}{_merged(r)}"
        for r in table.changed
    ]
    lines += [
        f"  + new   {_ms(r.ms_after)} ms  x{_calls(r.calls_after)}  {short_name(r.name)}"
        for r in table.new
    ]
    lines += [
        f"  - gone  {_ms(r.ms_before)} ms  x{_calls(r.calls_before)}  {short_name(r.name)}"
        for r in table.gone
    ]
    left = (
        table.num_matched - len(table.changed),
        table.num_new - len(table.new),
        table.num_gone - len(table.gone),
    )
    if any(left):
        lines.append(f"  ({left[0]} more changed, {left[1]} more new, {left[2]} more gone)")
    return lines


def diff_lines(diff: ProfileDiff) -> list[str]:
    """compare's per-step change section: step, phases, ops and (with a GPU) kernels."""
    tested = any(row.significant is not None for row in diff.phases)
    lines = [DIFF_HEADER if tested else SINGLE_WINDOW_HEADER, _step_line(diff)]
    if diff.phases:
        lines.append("phases (calls over the --repeat trials)" if tested else "phases")
        lines += [_phase_line(row, diff.has_gpu) for row in diff.phases]
    lines.append(f"ops ({diff.op_time} ms/step, by change)")
    lines += _row_lines(diff.ops)
    if diff.kernels is not None:
        lines.append(
            "kernels (ms/step, by change; matched by normalised name, then by launching op)"
        )
        lines.append(f"  rule: {safe_text(diff.kernel_rule)}")
        lines += _row_lines(diff.kernels)
    return lines
