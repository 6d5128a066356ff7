"""A FLOP count from the machine's cache is used only when the model could make it: an entry
off by more than an order of magnitude is counted again, with a note when it was wrong."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from libreyolo.measure import compute, flop_cache
from libreyolo.measure.compute import count_model_flops
from libreyolo.measure.flop_bounds import implausible
from libreyolo.measure.flop_cache import CACHE_NAME, flop_key
from libreyolo.measure.flop_count import count_flops
from libreyolo.workload.yolo9.model import YOLOv9
from tests.cache_entries import plant, stored
from tests.measure.test_flop_cache import cache  # noqa: F401 - the fixture

IMGSZ = 64


@pytest.fixture(scope="module")
def yolo9t() -> torch.nn.Module:
    torch.manual_seed(0)
    return YOLOv9("t").train()


def test_the_real_count_is_plausible_and_a_tenfold_one_is_not(yolo9t: torch.nn.Module) -> None:
    real = count_flops(yolo9t, batch=2, imgsz=IMGSZ, training=True)
    assert implausible(yolo9t, real) is None
    low = dataclasses.replace(real, forward=real.forward // 20)
    assert implausible(yolo9t, low) == (
        f"{real.forward / 2 / 20 / 1e9:.3g} GFLOP an image forward, outside the 0.00404-16.5 its "
        f"2,020,144 weights can make at {IMGSZ} px"
    )
    high = dataclasses.replace(real, forward=real.forward * 1000)
    assert implausible(yolo9t, high) is not None
    assert implausible(yolo9t, dataclasses.replace(real, backward=real.forward * 5)) == (
        "a backward 5x the forward, outside 1-3x"
    )


def test_a_poisoned_entry_is_counted_again_with_a_note(
    cache: Path,  # noqa: F811 - the fixture: a fresh cache folder
    yolo9t: torch.nn.Module,
) -> None:
    first = count_model_flops(yolo9t, batch=2, imgsz=IMGSZ, training=True, notes=[])
    assert first is not None
    key = flop_key(yolo9t, batch=2, imgsz=IMGSZ, training=True)
    assert key is not None
    entries = stored(CACHE_NAME)
    entries[key]["forward_flops"] //= 50  # type: ignore[index] # sealed, as a wrong count would be
    plant(CACHE_NAME, entries)
    compute._COUNTS.clear()  # a new process
    notes: list[str] = []
    again = count_model_flops(yolo9t, batch=2, imgsz=IMGSZ, training=True, notes=notes)
    assert again is not None and not again.cached
    assert again.forward_per_image == first.forward_per_image
    assert len(notes) == 1 and notes[0].startswith("the machine cache's FLOP count was not used (")
    assert notes[0].endswith(" px): counted again")
    key_count = flop_cache.cached_count(key, batch=2, imgsz=IMGSZ)
    assert key_count is not None and key_count.forward == 2 * first.forward_per_image  # rewritten
