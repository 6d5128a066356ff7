"""The `compute` and `energy` lines of `summary` (FLOPs per image, achieved FLOP/s, MFU against
each peak with its source, energy per image on CUDA) and `compare`'s compute deltas.

One line each, so a script can grep them: GFLOP/img and TFLOP/s to 3 significant digits, MFU
as a whole percentage (one decimal under 10 %). Unknown FLOPs say why, never 0; no energy line
where the profile has none (the notes say why on CUDA); compare prints a delta only where a
side has it. Pure: a view in, lines out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.render.safe import safe_text
from libreyolo.render.units import fmt_mfu, fmt_pct_change, fmt_sig

if TYPE_CHECKING:
    from libreyolo.analysis.compute_compare import ComputeDeltas
    from libreyolo.analysis.compute_view import ComputeView, EnergyView, PeakView
    from libreyolo.analysis.delta import Delta

GIGA = 1e9


def gflop(flops: float) -> str:
    """FLOPs as GFLOP to 3 significant digits."""
    return fmt_sig(flops / GIGA)


def peak_name(peak: PeakView, gpu: str | None) -> str:
    """`the H200 datasheet peak` or `the measured GEMM peak`."""
    if peak.source == "table":
        return f"the {safe_text(gpu)} datasheet peak" if gpu else "the datasheet peak"
    return "the measured GEMM peak"


def _peak_part(peak: PeakView, gpu: str | None, first: bool) -> str:
    busy = ", measured on a busy host" if peak.contended else ""
    figure = f"({fmt_sig(peak.tflops)} TFLOP/s {safe_text(peak.dtype)}{busy})"
    share = "unknown" if peak.mfu is None else fmt_mfu(peak.mfu)
    return f"{'MFU ' if first else ''}{share} of {peak_name(peak, gpu)} {figure}"


def _flops_part(view: ComputeView, flops: float) -> str:
    per_image = f"{gflop(flops)} GFLOP/img"
    forward, backward = view.forward_flops_per_image, view.backward_flops_per_image
    if forward is not None and backward is not None:
        per_image += f" (forward {gflop(forward)} + backward {gflop(backward)})"
    return per_image


def compute_line(view: ComputeView) -> str:
    """`compute  7.71 GFLOP/img · 0.107 TFLOP/s · MFU 33 % of the measured GEMM peak (...)`."""
    if view.flops_per_image is None:
        return f"compute  FLOPs unknown ({view.flops_unknown})"
    achieved = view.achieved_tflops
    parts = [
        _flops_part(view, view.flops_per_image),
        "TFLOP/s unknown (no img/s)" if achieved is None else f"{fmt_sig(achieved)} TFLOP/s",
    ]
    if view.peaks:
        parts.append(", ".join(_peak_part(p, view.gpu, i == 0) for i, p in enumerate(view.peaks)))
    else:
        parts.append("MFU unknown (no peak for this device, see notes)")
    return "compute  " + " · ".join(parts)


def energy_line(energy: EnergyView) -> str:
    """`energy   0.84 J/img · 1.19 img/J · 312 W mean, 700 W limit`."""
    parts = [f"{fmt_sig(energy.energy_j_per_img)} J/img"]
    if energy.img_per_j is not None:
        parts.append(f"{fmt_sig(energy.img_per_j)} img/J")
    if energy.mean_power_w is not None:
        limit = "" if energy.power_limit_w is None else f", {energy.power_limit_w:.0f} W limit"
        parts.append(f"{energy.mean_power_w:.0f} W mean{limit}")
    return "energy   " + " · ".join(parts)


def compute_lines(view: ComputeView) -> list[str]:
    """The summary's compute line and, where the profile measured it, its energy line."""
    lines = [compute_line(view)]
    if view.energy is not None:
        lines.append(energy_line(view.energy))
    return lines


def _side(value: object, scale: float = 1.0) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "?"
    return fmt_sig(value * scale)


def _delta_line(label: str, delta: Delta, unit: str, scale: float = 1.0) -> str:
    return (
        f"{label:<15}{_side(delta.before, scale)} -> {_side(delta.after, scale)}{unit}"
        f"{fmt_pct_change(delta.change)}"
    )


def compare_compute_lines(deltas: ComputeDeltas) -> list[str]:
    """FLOPs/img, TFLOP/s, MFU and J/img before and after, each where a side has it."""
    lines = []
    flops = deltas.flops_per_image
    if flops.before is not None or flops.after is not None:
        tag = "  [different work: not a regression]" if deltas.same_work is False else ""
        lines.append(_delta_line("FLOPs/img", flops, " GFLOP", 1 / GIGA) + tag)
    if deltas.achieved_tflops.before is not None or deltas.achieved_tflops.after is not None:
        lines.append(_delta_line("TFLOP/s", deltas.achieved_tflops, ""))
    mfu = deltas.mfu
    if mfu.before is not None or mfu.after is not None:
        sides = [fmt_mfu(v) if isinstance(v, int | float) else "?" for v in (mfu.before, mfu.after)]
        points = mfu.change_points
        moved = "" if points is None else f" ({points:+.1f} points)"
        lines.append(f"{'MFU':<15}{sides[0]} -> {sides[1]}{moved}")
    energy = deltas.energy_j_per_img
    if energy.before is not None or energy.after is not None:
        lines.append(_delta_line("J/img", energy, ""))
    return lines
