"""`tune.memory_budget_mb`: a sweep point that needs more memory than the budget does not fit.

Role: in the measuring process, before a CUDA point touches the GPU, cap the caching allocator
at the budget (`torch.cuda.set_per_process_memory_fraction`), so an allocation past it fails as
an out-of-memory error (the point's code `oom`, as for the device's own limit); after any point
has measured, compare its measured peak with the budget: `peak_vram_mb` on CUDA, `peak_rss_mb`
(the process's resident memory over the window) elsewhere, the largest trial's with
`window.repeat`. A peak above the budget fails the point with code `over_budget`; the profile
is real and stays recorded. The rules where the budget cannot hold:

* a budget that is not a positive number of MB: the point fails, code `usage`;
* a CUDA budget above the device's memory: the point fails, code `usage`, before measuring
  (the search would report what fits this device as what fits the budget);
* a point whose profile has no peak figure (peak RSS not measured: no /proc, clear_refs
  refused): it fails, code `usage`, profile kept; unchecked is never read as "fits".

MB are 10**6 bytes, as the metrics. Must not: measure, write files, or import torch at module
level (the sweep's Hydra process imports the point module).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

from libreyolo.document.model import Profile
from libreyolo.errors import OutOfMemoryError, UsageError

KEY = "tune.memory_budget_mb"
OVER_BUDGET = "over_budget"  # the point's code when its measured peak is above the budget
MB = 10**6
FULL_FRACTION = 1.0  # the allocator's default: the whole device


def checked_budget(value: object) -> float | None:
    """The budget in MB, None when unset; UsageError for anything but a positive number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{KEY} must be a number of MB (10**6 bytes); got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{KEY} must be a positive number of MB (10**6 bytes); got {value!r}")
    return float(value)


def _mb(value: float) -> str:
    """600 -> '600', 612.5 -> '612.5': the budget as the user wrote it."""
    return f"{value:g}"


@contextlib.contextmanager
def capped_device_memory(budget_mb: float | None, device_name: str) -> Iterator[None]:
    """The block with a CUDA device's caching allocator capped at `budget_mb` (nothing off
    CUDA or without a budget); the cap is lifted on the way out, so a later point measured in
    this process (`sweep.isolate=false`) is not held to it. An out-of-memory error inside
    names the budget."""
    if budget_mb is None:
        yield
        return
    from libreyolo.measure.device import resolve_device, select_device

    device = resolve_device(device_name)
    if device.type != "cuda":
        yield
        return
    import torch

    select_device(device)  # the context the cap creates lands on the measured GPU
    total = int(torch.cuda.get_device_properties(device).total_memory)
    budget_bytes = budget_mb * MB
    if budget_bytes > total:
        raise UsageError(
            f"{KEY} {_mb(budget_mb)} is above the {total / MB:.1f} MB of {device}: "
            "this device cannot tell what fits the budget",
            hint=f"lower {KEY}, or measure on a device with that much memory",
        )
    torch.cuda.set_per_process_memory_fraction(budget_bytes / total, device)
    try:
        yield
    except OutOfMemoryError as err:
        raise OutOfMemoryError(
            f"{err.message} under the {_mb(budget_mb)} MB budget ({KEY})", hint=err.hint
        ) from err
    finally:
        torch.cuda.set_per_process_memory_fraction(FULL_FRACTION, device)


def _peak_metric(profile: Profile) -> tuple[str, str]:
    """The metric a budget is checked against on the profile's device, and its name in words."""
    if (profile.run.device or "").startswith("cuda"):
        return "peak_vram_mb", "peak VRAM"
    return "peak_rss_mb", "peak RSS"


def _peak_mb(profile: Profile, metric: str) -> float | None:
    """The largest measured peak over the trials (the document's own with one trial); None
    when any trial lacks it."""
    maps = [trial.metrics for trial in profile.trials] or [profile.metrics]
    peaks = [m.get(metric) for m in maps]
    numbers = [float(p) for p in peaks if isinstance(p, int | float) and not isinstance(p, bool)]
    return max(numbers) if numbers and len(numbers) == len(peaks) else None


def budget_failure(profile: Profile, budget_mb: float) -> tuple[str, str] | None:
    """(code, reason) of a point whose measured peak breaks the budget or cannot be checked
    against it; None when the peak fits."""
    metric, words = _peak_metric(profile)
    peak = _peak_mb(profile, metric)
    if peak is None:
        return "usage", (
            f"{KEY} cannot be checked: the profile has no {metric} (see its notes) "
            f"(unset {KEY}, or measure where the peak can be measured)"
        )
    if peak > budget_mb:
        return OVER_BUDGET, f"{words} {peak:.1f} MB over the {_mb(budget_mb)} MB budget ({KEY})"
    return None
