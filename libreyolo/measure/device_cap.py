"""`tune.memory_budget_mb` where it is enforced: read as a number of MB, and a CUDA device's
caching allocator capped at it, so an allocation past it fails as an out-of-memory error.

Role: `checked_budget` refuses what is no budget; `capped_device_memory` caps the block's CUDA
device (nothing off CUDA or without a budget) and lifts the cap on the way out. A sweep point
caps its own process (`sweep/point.py`); on several ranks each rank caps its own GPU
(`measure/world.py`). `sweep/budget.py` checks the measured peak against the budget after.

MB are 10**6 bytes, as the metrics. Must not: measure, or import torch at module level.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

from libreyolo.errors import OutOfMemoryError, UsageError

BUDGET_KEY = "tune.memory_budget_mb"
MB = 10**6
FULL_FRACTION = 1.0  # the allocator's default: the whole device


def checked_budget(value: object) -> float | None:
    """The budget in MB, None when unset; UsageError for anything but a positive number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{BUDGET_KEY} must be a number of MB (10**6 bytes); got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise UsageError(
            f"{BUDGET_KEY} must be a positive number of MB (10**6 bytes); got {value!r}"
        )
    return float(value)


def budget_text(value: float) -> str:
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
            f"{BUDGET_KEY} {budget_text(budget_mb)} is above the {total / MB:.1f} MB of {device}: "
            "this device cannot tell what fits the budget",
            hint=f"lower {BUDGET_KEY}, or measure on a device with that much memory",
        )
    torch.cuda.set_per_process_memory_fraction(budget_bytes / total, device)
    try:
        yield
    except OutOfMemoryError as err:
        raise OutOfMemoryError(
            f"{err.message} under the {budget_text(budget_mb)} MB budget ({BUDGET_KEY})",
            hint=err.hint,
        ) from err
    finally:
        torch.cuda.set_per_process_memory_fraction(FULL_FRACTION, device)
