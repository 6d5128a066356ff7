"""The regression gate in words: the `gate:` line of compare's text and the stderr line of a
failed gate (exit 4). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from libreyolo.analysis.gate import GATE_METRICS

if TYPE_CHECKING:
    from libreyolo.analysis.gate import Gate


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


def regression_line(failed: Sequence[tuple[str | None, Gate]]) -> str:
    """The one stderr line of failed gates: `(point, gate)`, point None for two profiles."""
    return "regression: " + "; ".join(
        gate_reason(gate) if point is None else f"{point}: {gate_reason(gate)}"
        for point, gate in failed
    )
