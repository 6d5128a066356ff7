"""Time the speed-ups a training run did not use, each on the part of the step it changes.

Role: after the window (never inside it), ask the training runner for its variant pairs
(`workload.family.VariantPair`: the part of the step as run and as the variant would run it, on
one real batch) and time both, alternated, so the profile can name each speed-up as a lever with
a measured saving rather than an estimate. One untimed pass of each first: its allocations are
not the variant's cost.

Must not: run inside the window, change what the window measured, or fail a run that measured:
a pair that cannot run (memory, a family's bug) is a note, and the profile has no trial for it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from libreyolo.document.model import VariantTrial
from libreyolo.measure.device import synchronize

REPEATS = 3  # each side; medians (the part is a fraction of a step: three keep its cost small)


def time_variants(
    runner: object, batch: Callable[[], Any], device: torch.device, notes: list[str]
) -> list[VariantTrial]:
    """The runner's variant pairs on `batch()`, timed; [] for a runner without any (drawn only
    when it has some)."""
    pairs_of = getattr(runner, "variant_pairs", None)
    if pairs_of is None:
        return []
    trials: list[VariantTrial] = []
    try:
        pairs = pairs_of(batch())
        for pair in pairs:
            pair.as_run()
            pair.with_variant()
            as_run_ms: list[float] = []
            variant_ms: list[float] = []
            for _ in range(REPEATS):
                as_run_ms.append(_timed_ms(pair.as_run, device))
                variant_ms.append(_timed_ms(pair.with_variant, device))
            trials.append(
                VariantTrial(
                    variant=pair.variant,
                    part=pair.part,
                    as_run_ms=round(statistics.median(as_run_ms), 3),
                    variant_ms=round(statistics.median(variant_ms), 3),
                    repeats=REPEATS,
                )
            )
    except RuntimeError as err:  # torch's errors, out-of-memory among them
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        notes.append(f"variant trials: could not time the speed-ups after the window ({first})")
    return trials


def _timed_ms(part: Callable[[], object], device: torch.device) -> float:
    synchronize(device)
    start = time.perf_counter()
    part()
    synchronize(device)
    return (time.perf_counter() - start) * 1e3
