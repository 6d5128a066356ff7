"""`compare <sweep-a> <sweep-b>` as text: one line per point (img/s delta, its significance call,
the gate's verdict) and a last `gate:` line when a gate was asked for. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.render.gate_text import gate_reason, sweep_gate_line
from libreyolo.render.safe import short_name
from libreyolo.render.units import fmt_or_unknown, fmt_pct_change

if TYPE_CHECKING:
    from libreyolo.analysis.compare import Comparison
    from libreyolo.analysis.sweep_compare import SweepComparison

TAGS = {True: "significant", False: "NOT significant", None: "single run"}


def _compared(result: Comparison) -> str:
    img = result.img_per_s
    line = f"{fmt_or_unknown(img.before)} -> {fmt_or_unknown(img.after)}"
    line += f"{fmt_pct_change(img.change)}  [{TAGS[result.significance.significant]}]"
    if result.gate is not None:
        line += f"  gate {'FAILED' if result.gate.failed else 'passed'}: {gate_reason(result.gate)}"
    return line


def sweep_compare_lines(result: SweepComparison) -> list[str]:
    names = [short_name(p.point) for p in result.points]
    width = max([len("point"), *map(len, names)])
    lines = [f"{'point':<{width}}  img/s before -> after"]
    for name, point in zip(names, result.points, strict=True):
        what = (
            _compared(point.comparison)
            if point.comparison is not None
            else f"not compared: {point.not_compared}"
        )
        lines.append(f"{name:<{width}}  {what}")
    if result.threshold_pct is not None:
        lines.append(sweep_gate_line(result))
    return lines
