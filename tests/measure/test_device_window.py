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
def test_window_split_untraced(measured: int, unsynced: int, synced: int) -> None:
    plan = plan_window(3, measured, traced=False)
    assert (plan.num_unsynced, plan.num_synced, plan.num_bare) == (unsynced, synced, 0)
    assert plan.num_total == 3 + measured
    assert plan.num_traced == 3 + unsynced
    flags = [plan.is_synced(i) for i in range(plan.num_total)]
    assert flags == [False] * (3 + unsynced) + [True] * synced
    assert not any(plan.is_bare(i) for i in range(plan.num_total))
    assert plan.document().num_measured == measured
    assert plan.document().profiler_on is False


@pytest.mark.parametrize(("measured", "bare"), [(2, 1), (5, 2), (20, 10), (100, 20), (400, 20)])
def test_traced_window_has_bare_iterations_between_the_halves(measured: int, bare: int) -> None:
    plan = plan_window(2, measured)
    unsynced = max(1, measured // 2)
    assert plan.num_bare == bare
    assert plan.num_total == 2 + measured + bare
    kinds = [
        "bare" if plan.is_bare(i) else "synced" if plan.is_synced(i) else "traced"
        for i in range(plan.num_total)
    ]
    expected = ["traced"] * (2 + unsynced) + ["bare"] * bare
    assert kinds == expected + ["synced"] * (measured - unsynced)
    assert plan.progress(plan.num_total - 1) == (
        "measured step",
        measured + bare,
        measured + bare,
    )
    window = plan.document()
    assert (window.num_bare, window.profiler_on) == (bare, True)


@pytest.mark.parametrize(("warmup", "measured"), [(-1, 4), (0, 1), (0, 0)])
def test_window_rejects_bad_counts(warmup: int, measured: int) -> None:
    with pytest.raises(UsageError):
        plan_window(warmup, measured)
