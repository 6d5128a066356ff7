"""The `compute` and `energy` lines of `summary`: FLOPs per image, achieved FLOP/s, MFU against
each peak with its source, and the energy per image on CUDA.

One line each, so a script can grep them: GFLOP/img and TFLOP/s to 3 significant digits, MFU
as a whole percentage (one decimal under 10 %). Unknown FLOPs say why, never 0; no energy line
where the profile has none (the notes say why on CUDA). Pure: a view in, lines out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.render.safe import safe_text
from libreyolo.render.units import fmt_mfu, fmt_sig

if TYPE_CHECKING:
    from libreyolo.analysis.compute_view import ComputeView, EnergyView, PeakView

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
