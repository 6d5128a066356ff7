"""The regression gate in words: the `gate:` line of compare's text and the stderr line of a
failed gate (exit 4). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from libreyolo.analysis.gate import GATE_METRICS
from libreyolo.render.safe import short_name

if TYPE_CHECKING:
    from libreyolo.analysis.compare import Comparison
    from libreyolo.analysis.gate import Gate
    from libreyolo.analysis.sweep_compare import SweepComparison

MAX_LISTED = 5  # points named in the stderr line; the rest are counted


def gate_reason(gate: Gate) -> str:
    """`img/s fell 12.3% (> 5%), significant (Welch t, df=3.9)`."""
    verb = "fell" if gate.change_pct < 0 else "rose"
    threshold = f"{gate.threshold_pct:g}%"
    if gate.worse_pct > gate.threshold_pct:
        bound = f"> {threshold}"
    elif gate.worse_pct > 0:
        bound = f"<= {threshold}"
    else:
        bound = "no regression"
    called = "significant" if gate.significant else "not significant"
    label = GATE_METRICS[gate.metric][0]
    return f"{label} {verb} {abs(gate.change_pct):.1f}% ({bound}), {called} ({gate.how})"


def gate_line(gate: Gate) -> str:
    """The last line of compare's text when a gate was asked for."""
    return f"gate: {'FAILED' if gate.failed else 'passed'}, {gate_reason(gate)}"


def _listed(items: Sequence[str], more: str, sep: str) -> str:
    """At most MAX_LISTED of `items`, joined by `sep`; the rest counted (`and 3 more points`)."""
    extra = len(items) - MAX_LISTED
    return sep.join(items[:MAX_LISTED]) + (f"{sep}and {extra} more {more}" if extra > 0 else "")


def regression_line(result: Comparison | SweepComparison) -> str:
    """The one stderr line of a failed gate: each regression (`point: ...` for a sweep), then
    the points that could not be compared (a sweep's), at most MAX_LISTED of each."""
    regressions = [
        gate_reason(gate) if point is None else f"{short_name(point)}: {gate_reason(gate)}"
        for point, gate in result.failed_gates
    ]
    uncompared = [
        f"{short_name(p.point)} ({p.not_compared})" for p in getattr(result, "uncompared", ())
    ]
    parts = [_listed(regressions, "regressions", "; ")] if regressions else []
    if uncompared:
        parts.append("not compared: " + _listed(uncompared, "points", ", "))
    return "regression: " + ("; ".join(parts) or "no point was compared")


def sweep_gate_line(result: SweepComparison) -> str:
    """The last line of a sweep comparison under a gate: how many points were compared and
    how many regressed; every point must be compared for the gate to pass."""
    compared, total = result.num_compared, len(result.points)
    failed = len(result.failed_gates)
    if not result.gate_failed:
        return f"gate: passed at all {compared} compared points"
    if compared == 0:
        return f"gate: FAILED, none of the {total} points could be compared"
    missed = total - compared
    line = f"gate: FAILED at {failed} of {compared} compared points"
    return line + (f"; {missed} of {total} points not compared" if missed else "")
