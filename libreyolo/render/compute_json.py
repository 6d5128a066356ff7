"""A ComputeView as `summary --json`'s `compute` object. Stdlib only, pure.

Always present, one shape: a profile without the data has nulls (and `flops_unknown` saying
why), never zeros. The numbers are the metric map's, under its names, so `get` and `summary
--json` print the same values; `peaks` lists the headline peak first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.document.json_value import JsonObject

if TYPE_CHECKING:
    from libreyolo.analysis.compute_view import ComputeView, EnergyView


def _energy(energy: EnergyView | None) -> JsonObject | None:
    if energy is None:
        return None
    return {
        "energy_j_per_img": energy.energy_j_per_img,
        "img_per_j": energy.img_per_j,
        "mean_power_w": energy.mean_power_w,
        "power_limit_w": energy.power_limit_w,
    }


def compute_json(view: ComputeView) -> JsonObject:
    """FLOPs, achieved FLOP/s, the peaks with their sources, MFU, the convention, energy."""
    return {
        "math_dtype": view.math_dtype,
        "flops_per_image": view.flops_per_image,
        "forward_flops_per_image": view.forward_flops_per_image,
        "backward_flops_per_image": view.backward_flops_per_image,
        "flops_unknown": view.flops_unknown,
        "achieved_tflops": view.achieved_tflops,
        "peaks": [
            {
                "source": p.source,
                "dtype": p.dtype,
                "tflops": p.tflops,
                "reference": p.reference,
                "mfu": p.mfu,
                "contended": p.contended,
            }
            for p in view.peaks
        ],
        "peak_source": view.peak_source,
        "mfu": view.mfu,
        "mfu_table": view.mfu_table,
        "mfu_measured": view.mfu_measured,
        "convention": view.convention,
        "energy": _energy(view.energy),
    }
