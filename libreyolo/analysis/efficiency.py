"""How far the window is from the hardware's limit: FLOPs, achieved FLOP/s, MFU and energy.

Pure: reads a profile's `compute` record and the window's img/s. Achieved FLOP/s is the FLOPs
of one image times the images per second of the window (`img_per_s`: end to end for inference,
preprocess and NMS included, as a user's throughput is), so it is the model FLOP rate the
user's loop really got. MFU is achieved over a peak in the window's math dtype: the datasheet's
dense peak where the GPU is in the table (MFU's usual meaning), else the measured GEMM peak;
both are kept where both exist. Energy per image is the NVML counter's joules over the images
of the same iterations. Every value is null ("unknown") where its input is: a 1.6.0 file, a
bare trace, a family whose count failed, a CPU's energy.
"""

from __future__ import annotations

from libreyolo.document.model import Compute, Peak, Scalar

# Present in every v2 profile's metric map, null when unknown.
KEYS = (
    "flops_per_image",
    "forward_flops_per_image",
    "backward_flops_per_image",
    "math_dtype",
    "achieved_tflops",
    "peak_tflops",
    "peak_source",
    "mfu",
    "peak_table_tflops",
    "peak_measured_tflops",
    "mfu_table",
    "mfu_measured",
    "energy_j_per_img",
    "img_per_j",
    "mean_power_w",
    "power_limit_w",
)
SIGNIFICANT = 4  # digits kept of FLOP rates and fractions: CPU rates are small numbers


def significant(value: float, digits: int = SIGNIFICANT) -> float:
    """`value` rounded to `digits` significant digits (0.0 stays 0.0)."""
    return float(f"{value:.{digits}g}")


def peak_of(compute: Compute, source: str) -> Peak | None:
    return next((p for p in compute.peaks if p.source == source), None)


def headline_peak(compute: Compute) -> Peak | None:
    """The datasheet peak where there is one, else the measured one."""
    return peak_of(compute, "table") or peak_of(compute, "measured")


def _mfu(achieved: float | None, peak: Peak | None) -> float | None:
    if achieved is None or peak is None or peak.tflops <= 0:
        return None
    return significant(achieved / peak.tflops)


def efficiency_metrics(compute: Compute | None, img_per_s: float | None) -> dict[str, Scalar]:
    """The `KEYS` of one profile (all null without a compute record)."""
    metrics: dict[str, Scalar] = dict.fromkeys(KEYS)
    if compute is None:
        return metrics
    metrics["math_dtype"] = compute.math_dtype
    flops = compute.flops
    achieved = None
    if flops is not None:
        metrics["flops_per_image"] = round(flops.per_image)
        metrics["forward_flops_per_image"] = round(flops.forward_per_image)
        if flops.backward_per_image is not None:
            metrics["backward_flops_per_image"] = round(flops.backward_per_image)
        if img_per_s:
            achieved = flops.per_image * img_per_s / 1e12
            metrics["achieved_tflops"] = significant(achieved)
    table, measured, headline = (
        peak_of(compute, "table"),
        peak_of(compute, "measured"),
        headline_peak(compute),
    )
    metrics |= {
        "peak_tflops": None if headline is None else headline.tflops,
        "peak_source": None if headline is None else headline.source,
        "mfu": _mfu(achieved, headline),
        "peak_table_tflops": None if table is None else table.tflops,
        "peak_measured_tflops": None if measured is None else measured.tflops,
        "mfu_table": _mfu(achieved, table),
        "mfu_measured": _mfu(achieved, measured),
    }
    energy = compute.energy
    # A counter that did not advance (or went back) read nothing: unknown, never 0 J/img.
    if energy is not None and energy.joules > 0 and energy.num_images > 0 and energy.window_ms > 0:
        metrics |= {
            "energy_j_per_img": significant(energy.joules / energy.num_images),
            "img_per_j": significant(energy.num_images / energy.joules),
            "mean_power_w": round(energy.joules / (energy.window_ms / 1000), 1),
            "power_limit_w": energy.power_limit_w,
        }
    return metrics
