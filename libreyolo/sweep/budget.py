"""`tune.memory_budget_mb`: a sweep point that needs more memory than the budget does not fit.

Role: after a point has measured, compare its measured peak with the budget: `peak_vram_mb` on
CUDA, `peak_rss_mb` (the process's resident memory over the window) elsewhere, the largest
trial's with `window.repeat`, the largest rank's on several ranks (the budget is each rank's:
its process, or its GPU). A peak above the budget fails the point with code `over_budget`; the
profile is real and stays recorded. Before it measures, a CUDA point's allocator is capped at
the budget (`measure/device_cap.py`), so an allocation past it fails as out of memory (code
`oom`). Where the budget cannot hold:

* a budget that is not a positive number of MB: the point fails, code `usage`;
* a CUDA budget above the device's memory: the point fails, code `usage`, before measuring
  (the search would report what fits this device as what fits the budget);
* a point whose profile has no peak figure (peak RSS not measured: no /proc, clear_refs
  refused): it fails, code `usage`, profile kept; unchecked is never read as "fits".

MB are 10**6 bytes, as the metrics. Must not: measure, write files, or import torch at module
level (the sweep's Hydra process imports the point module).
"""

from __future__ import annotations

from libreyolo.document.model import Profile
from libreyolo.measure.device_cap import BUDGET_KEY as KEY
from libreyolo.measure.device_cap import budget_text

OVER_BUDGET = "over_budget"  # the point's code when its measured peak is above the budget


def _peak_metric(profile: Profile) -> tuple[str, str]:
    """The metric a budget is checked against on the profile's device, and its name in words."""
    if (profile.run.device or "").startswith("cuda"):
        return "peak_vram_mb", "peak VRAM"
    return "peak_rss_mb", "peak RSS"


def _peaks(profile: Profile, metric: str) -> list[tuple[str, object]]:
    """Each measured peak and whose it is ("rank 1's "): every rank's in a world profile (the
    budget holds per rank: each rank's process, or its GPU), else every trial's (the
    document's own with one trial)."""
    if profile.world is not None:
        return [(f"rank {r.rank}'s ", getattr(r, metric)) for r in profile.world.ranks]
    maps = [trial.metrics for trial in profile.trials] or [profile.metrics]
    return [("", m.get(metric)) for m in maps]


def _peak_mb(profile: Profile, metric: str) -> tuple[str, float] | None:
    """The largest measured peak and whose it is; None when any trial or rank lacks it."""
    peaks = _peaks(profile, metric)
    numbers = [
        (whose, float(p))
        for whose, p in peaks
        if isinstance(p, int | float) and not isinstance(p, bool)
    ]
    if not numbers or len(numbers) != len(peaks):
        return None
    return max(numbers, key=lambda found: found[1])


def budget_failure(profile: Profile, budget_mb: float) -> tuple[str, str] | None:
    """(code, reason) of a point whose measured peak breaks the budget or cannot be checked
    against it; None when the peak fits."""
    metric, words = _peak_metric(profile)
    found = _peak_mb(profile, metric)
    if found is None:
        return "usage", (
            f"{KEY} cannot be checked: the profile has no {metric} (see its notes) "
            f"(unset {KEY}, or measure where the peak can be measured)"
        )
    whose, peak = found
    if peak > budget_mb:
        return OVER_BUDGET, (
            f"{whose}{words} {peak:.1f} MB over the {budget_text(budget_mb)} MB budget ({KEY})"
        )
    return None
