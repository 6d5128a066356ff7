"""What the readers show of how far a window is from the hardware's limit: FLOPs per image,
achieved FLOP/s, the peaks with their sources, MFU against each, and energy.

Role: the one reading of a profile's `compute` record that `summary` (text and JSON), the
report page's card and the verdict share. The numbers are the metric map's (what `get` prints,
trial means in a `--repeat` aggregate); the peaks' sources, the convention and why the FLOPs
are unknown come from the record. Unknown stays None, never 0: a 1.6.0 file or a bare trace
has no record, a run whose count failed has no `flops` (its notes say why).

Must not: format numbers for people (render does), read files, import torch.
"""

from __future__ import annotations

import msgspec

from libreyolo.analysis import stats
from libreyolo.analysis.efficiency import headline_peak
from libreyolo.document.model import Profile, Scalar

NO_RECORD = "no count in this file"  # a 1.6.0 file, a bare trace, an older v2 file
COUNT_FAILED = "the count failed, see notes"
# A device name's vendor prefix, left out where the name labels a datasheet ("H200", not
# "NVIDIA H200"); torch.cuda.get_device_name() spells it this way.
VENDOR_PREFIXES = ("NVIDIA ", "Tesla ")


class PeakView(msgspec.Struct, frozen=True):
    source: str  # table | measured
    dtype: str
    tflops: float
    reference: str  # the datasheet, or the GEMM's shape and runs
    mfu: float | None  # achieved over this peak
    contended: bool  # measured on a host that took CPU time from the calibration


class EnergyView(msgspec.Struct, frozen=True):
    energy_j_per_img: float
    img_per_j: float | None
    mean_power_w: float | None
    power_limit_w: float | None


class ComputeView(msgspec.Struct, frozen=True):
    math_dtype: str | None
    flops_per_image: float | None  # inference: the forward; training: forward + backward
    forward_flops_per_image: float | None
    backward_flops_per_image: float | None  # training only
    flops_unknown: str | None  # why flops_per_image is None (NO_RECORD, COUNT_FAILED)
    achieved_tflops: float | None
    peaks: tuple[PeakView, ...]  # the headline peak first
    peak_source: str | None  # the headline peak's
    mfu: float | None  # against the headline peak
    mfu_table: float | None
    mfu_measured: float | None
    convention: str | None  # how the FLOPs were counted
    gpu: str | None  # the GPU a datasheet peak is of, vendor prefix removed
    energy: EnergyView | None  # CUDA with NVML only


def _number(metrics: dict[str, Scalar], key: str) -> float | None:
    return stats.as_number(metrics.get(key))


def _gpu_label(name: str | None) -> str | None:
    if not name:
        return None
    for prefix in VENDOR_PREFIXES:
        name = name.removeprefix(prefix)
    return name


def compute_view(profile: Profile) -> ComputeView:
    """The compute facts of `profile`; every number None where the profile cannot tell."""
    m, compute = profile.metrics, profile.compute
    flops = compute.flops if compute is not None else None
    mfu_of = {"table": _number(m, "mfu_table"), "measured": _number(m, "mfu_measured")}
    peaks: tuple[PeakView, ...] = ()
    if compute is not None:
        headline = headline_peak(compute)
        ordered = sorted(compute.peaks, key=lambda p: p is not headline)
        peaks = tuple(
            PeakView(
                source=p.source,
                dtype=p.dtype,
                tflops=p.tflops,
                reference=p.reference,
                mfu=mfu_of.get(p.source),
                contended=p.contended is True,
            )
            for p in ordered
        )
    energy = None
    j_per_img = _number(m, "energy_j_per_img")
    if j_per_img is not None:
        energy = EnergyView(
            energy_j_per_img=j_per_img,
            img_per_j=_number(m, "img_per_j"),
            mean_power_w=_number(m, "mean_power_w"),
            power_limit_w=_number(m, "power_limit_w"),
        )
    flops_per_image = _number(m, "flops_per_image")
    unknown = None
    if flops_per_image is None:
        unknown = NO_RECORD if compute is None else COUNT_FAILED
    return ComputeView(
        math_dtype=compute.math_dtype if compute is not None else None,
        flops_per_image=flops_per_image,
        forward_flops_per_image=_number(m, "forward_flops_per_image"),
        backward_flops_per_image=_number(m, "backward_flops_per_image"),
        flops_unknown=unknown,
        achieved_tflops=_number(m, "achieved_tflops"),
        peaks=peaks,
        peak_source=peaks[0].source if peaks else None,
        mfu=_number(m, "mfu"),
        mfu_table=mfu_of["table"],
        mfu_measured=mfu_of["measured"],
        convention=flops.convention if flops is not None else None,
        gpu=_gpu_label(profile.environment.device_name),
        energy=energy,
    )
