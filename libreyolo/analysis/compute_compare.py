"""`compare`'s compute deltas: FLOPs per image, achieved FLOP/s, MFU and energy per image.

Achieved FLOP/s and MFU are better higher, J/img lower; MFU is a share, compared in points.
FLOPs per image are not better or worse: a change means the two profiles ran different work
(another model, size, input size or mode), so their img/s and MFU are not a like-for-like
comparison, and compare says that in a warning instead of calling either side a regression.
MFU against different peaks (another source or math dtype) is flagged the same way. None of
these feed the regression gate (`gate.GATE_METRICS`). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from libreyolo.analysis import stats
from libreyolo.analysis.delta import Delta, ShareDelta
from libreyolo.document.model import Profile

# The count is exact for one model and input; two counts this close are the same work (a
# `--repeat` mean is rounded to 3 decimals, nothing else separates them).
SAME_FLOPS_REL = 1e-6
GIGA = 1e9


@dataclass(frozen=True, slots=True)
class ComputeDeltas:
    flops_per_image: Delta
    achieved_tflops: Delta
    mfu: ShareDelta
    energy_j_per_img: Delta
    same_work: bool | None  # equal FLOPs per image; None when a side has no count


def _flops(profile: Profile) -> float | None:
    return stats.as_number(profile.metrics.get("flops_per_image"))


def _same(before: float | None, after: float | None) -> bool | None:
    if before is None or after is None:
        return None
    return abs(after - before) <= SAME_FLOPS_REL * max(abs(before), abs(after))


def compute_deltas(before: Profile, after: Profile) -> ComputeDeltas:
    """The compute deltas from `before` to `after` (null sides where a profile has none)."""
    a, b = before.metrics, after.metrics
    return ComputeDeltas(
        flops_per_image=Delta(a.get("flops_per_image"), b.get("flops_per_image")),
        achieved_tflops=Delta(a.get("achieved_tflops"), b.get("achieved_tflops")),
        mfu=ShareDelta(a.get("mfu"), b.get("mfu")),
        energy_j_per_img=Delta(a.get("energy_j_per_img"), b.get("energy_j_per_img")),
        same_work=_same(_flops(before), _flops(after)),
    )


def _peak(profile: Profile) -> str:
    dtype = profile.compute.math_dtype if profile.compute is not None else None
    return f"{profile.metrics.get('peak_source')} {dtype}"


def compute_warnings(before: Profile, after: Profile) -> tuple[str, ...]:
    """Different FLOPs per image (different work), and MFU against different peaks."""
    out = []
    flops = _flops(before), _flops(after)
    if flops[0] is not None and flops[1] is not None and not _same(*flops):
        out.append(
            f"the profiles count different FLOPs per image ({flops[0] / GIGA:.3g} vs "
            f"{flops[1] / GIGA:.3g} GFLOP): a different model, size, input size or mode, so "
            "img/s and MFU compare different work; that is no regression"
        )
    known = all(p.metrics.get("mfu") is not None for p in (before, after))
    if known and _peak(before) != _peak(after):
        out.append(
            f"MFU is against different peaks ({_peak(before)} vs {_peak(after)}): compare the "
            "achieved TFLOP/s"
        )
    return tuple(out)
