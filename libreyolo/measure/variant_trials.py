"""Time the speed-ups a training run did not use, each on the part of the step it changes.

Role: after the window (never inside it), ask the training runner for its variant pairs
(`workload.family.VariantPair`: the part of the step as run and as the variant would run it, on
one real batch) and time both, alternated, so the profile can name each speed-up as a lever with
a measured saving rather than an estimate. One untimed pass of each first: its allocations are
not the variant's cost. Pairs that share their part as run (the same callable: the loss at 300
rows against both trimmed targets and the vectorised assigner) time it once per round, each
variant beside it, so the dearest part is not run twice as often as it needs.

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
from libreyolo.workload.family import VariantPair

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
        for as_run, pairs in _by_part_as_run(pairs_of(batch())):
            trials += _time_group(as_run, pairs, device)
    except RuntimeError as err:  # torch's errors, out-of-memory among them
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        notes.append(f"variant trials: could not time the speed-ups after the window ({first})")
    return trials


def _by_part_as_run(
    pairs: list[VariantPair],
) -> list[tuple[Callable[[], object], list[VariantPair]]]:
    """`pairs` grouped by their part as run (the same callable), in the order given."""
    groups: list[tuple[Callable[[], object], list[VariantPair]]] = []
    for pair in pairs:
        for as_run, members in groups:
            if as_run is pair.as_run:
                members.append(pair)
                break
        else:
            groups.append((pair.as_run, [pair]))
    return groups


def _time_group(
    as_run: Callable[[], object], pairs: list[VariantPair], device: torch.device
) -> list[VariantTrial]:
    """One part as run and its variants: an untimed pass of each, then REPEATS rounds of the
    part as run followed by each variant; medians."""
    as_run()
    for pair in pairs:
        pair.with_variant()
    as_run_ms: list[float] = []
    variant_ms: list[list[float]] = [[] for _ in pairs]
    for _ in range(REPEATS):
        as_run_ms.append(_timed_ms(as_run, device))
        for times, pair in zip(variant_ms, pairs, strict=True):
            times.append(_timed_ms(pair.with_variant, device))
    as_run_median_ms = round(statistics.median(as_run_ms), 3)
    return [
        VariantTrial(
            variant=pair.variant,
            part=pair.part,
            as_run_ms=as_run_median_ms,
            variant_ms=round(statistics.median(times), 3),
            repeats=REPEATS,
        )
        for pair, times in zip(pairs, variant_ms, strict=True)
    ]


def _timed_ms(part: Callable[[], object], device: torch.device) -> float:
    synchronize(device)
    start = time.perf_counter()
    part()
    synchronize(device)
    return (time.perf_counter() - start) * 1e3
