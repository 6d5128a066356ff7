"""What MFU adds to a verdict: the number as evidence, and, for a busy GPU far below its peak,
the reason and the levers that raise it.

Role: `verdict.decide` hands every quiet-host verdict here. A known `mfu` always joins the
evidence. A GPU `compute` verdict (busy ≥ GPU_BUSY_FOR_MFU) at an MFU under LOW_MFU against the
headline peak says so ("GPU busy 95 % but at 6.1 % of its bf16 datasheet peak: small kernels,
not saturated math") and leads with the levers that give the math units more work per kernel,
only those not already in effect (AMP when the math ran in fp32 or tf32, TF32 when in fp32,
channels-last when a step or an inference ran without it). CPU profiles get the evidence only (a
CPU's "busy" is not measured the same way); the bound label never changes.

Must not: decide the bound, or touch a contended verdict (its numbers are inflated: `decide`
keeps it as it is).
"""

from __future__ import annotations

import msgspec.structs

from libreyolo.analysis import stats
from libreyolo.document.mode import Mode
from libreyolo.document.model import Profile, Scalar, Verdict

# Busy this much, idle gaps cannot explain a low MFU: the kernels that do run leave the math
# units idle (small or memory-bound kernels).
GPU_BUSY_FOR_MFU = 0.9
# Under a fifth of the peak: dense convolutions with enough work per kernel run well above it
# (the measured GEMM peak is such a kernel), so the step's kernels are not math-bound.
LOW_MFU = 0.2
# The compute verdict's levers that the MFU levers replace: AMP is named exactly there, and a
# smaller --imgsz would lower the work per kernel the MFU levers raise.
REPLACED_LEVERS = frozenset({"AMP / bf16", "smaller --imgsz"})
FUSE_WITH_CHANNELS_LAST = "full"  # the yolo9 fusion that runs weights and inputs channels-last


def _pct(share: float) -> str:
    """A percentage as the summary prints MFU: whole, one decimal under 10 %."""
    pct = round(share * 100, 1)
    return f"{pct:.1f} %" if pct < 10 else f"{pct:.0f} %"


def _channels_last_in_effect(profile: Profile) -> bool:
    """A training step ran channels-last when its execution record says so (1.6.0's NCHW by
    default; files without a record predate that and ran NHWC); an inference did when yolo9's
    full fusion took effect. A family without fusion modes (yolox) has no inference
    channels-last path to offer."""
    if profile.kind != Mode.INFER:
        return profile.execution is None or profile.execution.channels_last
    if profile.run.family not in (None, "yolo9"):
        return True
    model = profile.run.config.get("model")
    fuse = model.get("fuse") if isinstance(model, dict) else None
    return profile.run.fused is True and fuse == FUSE_WITH_CHANNELS_LAST


def mfu_levers(profile: Profile, math_dtype: str | None) -> list[str]:
    """What raises MFU on this profile, leaving out what it already ran with."""
    levers = [
        "larger --batch (more work per kernel)",
        "larger --imgsz where accuracy wants it (larger convolutions)",
    ]
    if not _channels_last_in_effect(profile):
        how = "infer --fuse full" if profile.kind == Mode.INFER else "run --variant channels_last"
        levers.append(f"channels-last ({how})")
    if math_dtype in ("fp32", "tf32"):
        levers.append("AMP (infer --half)" if profile.kind == Mode.INFER else "AMP (run --amp)")
    if math_dtype == "fp32":
        levers.append("TF32 for fp32 math (an Ampere or newer GPU)")
    return levers


def _peak_words(dtype: str | None, metrics: dict[str, Scalar]) -> str:
    of = f"{dtype} " if dtype else ""
    if metrics.get("peak_source") == "table":
        return f"its {of}datasheet peak"
    return f"the measured {of}GEMM peak"


def with_mfu(profile: Profile, metrics: dict[str, Scalar], verdict: Verdict) -> Verdict:
    """`verdict` with `mfu` in its evidence when known, and, for a busy GPU at a low MFU, the
    reason and the levers that raise it."""
    mfu = stats.as_number(metrics.get("mfu"))
    if mfu is None:
        return verdict
    evidence = verdict.evidence | {"mfu": mfu}
    util = stats.as_number(metrics.get("gpu_util"))
    has_gpu = profile.trace is not None and profile.trace.has_gpu
    if verdict.bound != "compute" or not has_gpu or util is None or util < GPU_BUSY_FOR_MFU:
        return msgspec.structs.replace(verdict, evidence=evidence)
    if mfu >= LOW_MFU:
        return msgspec.structs.replace(verdict, evidence=evidence)
    dtype = profile.compute.math_dtype if profile.compute is not None else None
    why = (
        f"GPU busy {_pct(util)} but at {_pct(mfu)} of {_peak_words(dtype, metrics)}: "
        "small kernels, not saturated math"
    )
    kept = [lever for lever in verdict.levers if lever not in REPLACED_LEVERS]
    return msgspec.structs.replace(
        verdict,
        why=why,
        evidence=evidence | {"peak_source": metrics.get("peak_source")},
        levers=mfu_levers(profile, dtype) + kept,
    )
