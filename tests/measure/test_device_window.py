"""Device parsing and the window split: pure rules, no model."""

from __future__ import annotations

import pytest
import torch

from libreyolo.errors import UsageError
from libreyolo.measure.device import resolve_device
from libreyolo.measure.window import plan_window


def test_cpu_device_resolves() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(" CPU ") == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("spec", ["0", "cuda", "cuda:0"])
def test_cuda_without_cuda_is_a_usage_error(spec: str) -> None:
    with pytest.raises(UsageError) as info:
        resolve_device(spec)
    assert "needs CUDA, but torch finds no CUDA device" in info.value.message
    assert info.value.hint == "use --device cpu"


@pytest.mark.parametrize("spec", ["0,1", "", "tpu", "banana"])
def test_bad_device_strings_are_usage_errors(spec: str) -> None:
    with pytest.raises(UsageError):
        resolve_device(spec)


@pytest.mark.parametrize(
    ("measured", "unsynced", "synced"), [(2, 1, 1), (3, 1, 2), (5, 2, 3), (20, 10, 10), (4, 2, 2)]
)
def test_window_split(measured: int, unsynced: int, synced: int) -> None:
    plan = plan_window(3, measured)
    assert (plan.num_unsynced, plan.num_synced) == (unsynced, synced)
    assert plan.num_total == 3 + measured
    assert plan.num_traced == 3 + unsynced
    flags = [plan.is_synced(i) for i in range(plan.num_total)]
    assert flags == [False] * (3 + unsynced) + [True] * synced
    assert plan.document().num_measured == measured


@pytest.mark.parametrize(("warmup", "measured"), [(-1, 4), (0, 1), (0, 0)])
def test_window_rejects_bad_counts(warmup: int, measured: int) -> None:
    with pytest.raises(UsageError):
        plan_window(warmup, measured)
