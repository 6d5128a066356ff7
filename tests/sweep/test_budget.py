"""`tune.memory_budget_mb`: a point whose measured peak is above the budget fails `over_budget`
with its profile kept; a CUDA point's allocator is capped at the budget (torch.cuda faked: no
GPU here); a budget the numbers cannot check fails the point rather than reading as a fit."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec.structs
import pytest
import torch

from libreyolo.document.convert import to_plain
from libreyolo.document.files import load
from libreyolo.document.model import Trial
from libreyolo.errors import OutOfMemoryError, UsageError
from libreyolo.measure import device as device_module
from libreyolo.measure.device_cap import capped_device_memory, checked_budget
from libreyolo.sweep.budget import budget_failure
from libreyolo.sweep.point import run_point
from tests.profiles import training_profile
from tests.sweep.helpers import CHECKPOINT
from tests.sweep.test_resume import _cfg

OVER = re.compile(r"peak RSS (\d+\.\d) MB over the 1 MB budget \(tune\.memory_budget_mb\)")
GPU_BYTES = 8 * 10**9  # the faked device's memory


def _point(tmp_path: Path, name: str, budget: object) -> dict[str, Any]:
    """One tiny CPU inference point measured in this process under `budget`."""
    cfg = _cfg(tmp_path, mode="infer", batch=1, imgsz=64, trace=False, threads=1)
    cfg["model"] |= {"weights": str(CHECKPOINT)}
    cfg["window"] |= {"warmup": 1, "runs": 2}
    cfg["tune"] |= {"memory_budget_mb": budget}
    record = to_plain(run_point(cfg, tmp_path / name, isolate=False))
    assert isinstance(record, dict)
    assert json.loads((tmp_path / name / "status.json").read_text(encoding="utf-8")) == record
    return record


def test_a_cpu_point_above_its_budget_fails_with_its_profile_kept(tmp_path: Path) -> None:
    record = _point(tmp_path, "small", 1)
    assert (record["status"], record["code"], record["profile"]) == (
        "failed",
        "over_budget",
        "infer/profile.json",
    )
    found = OVER.fullmatch(record["reason"])
    assert found is not None, record["reason"]
    profile = json.loads((tmp_path / "small" / "infer" / "profile.json").read_text("utf-8"))
    assert float(found.group(1)) == profile["metrics"]["peak_rss_mb"] > 1
    roomy = _point(tmp_path, "roomy", 10**9)
    assert (roomy["status"], roomy["code"], roomy["profile"]) == ("ok", "", "infer/profile.json")


@pytest.mark.parametrize(
    ("budget", "reason"),
    [
        (-5, "tune.memory_budget_mb must be a positive number of MB (10**6 bytes); got -5"),
        ("lots", "tune.memory_budget_mb must be a number of MB (10**6 bytes); got 'lots'"),
    ],
)
def test_an_unusable_budget_fails_the_point_before_it_measures(
    tmp_path: Path, budget: object, reason: str
) -> None:
    record = _point(tmp_path, "p", budget)
    assert (record["status"], record["code"], record["reason"]) == ("failed", "usage", reason)
    assert record["profile"] is None and not (tmp_path / "p" / "infer").exists()


@pytest.mark.parametrize("value", [0, float("nan"), float("inf"), True])
def test_checked_budget_refuses_what_is_no_budget(value: object) -> None:
    with pytest.raises(UsageError, match=r"^tune\.memory_budget_mb must be"):
        checked_budget(value)


def test_checked_budget_keeps_a_number_and_none() -> None:
    assert [checked_budget(v) for v in (600, 612.5, None)] == [600.0, 612.5, None]


def _with(device: str, *trials: dict[str, Any]) -> Any:
    """A profile on `device` whose trials (or, with one, its own map) hold these metrics."""
    profile = training_profile(device)
    if len(trials) == 1:
        return msgspec.structs.replace(profile, metrics=profile.metrics | trials[0])
    records = [Trial(index=i, metrics=m) for i, m in enumerate(trials)]
    return msgspec.structs.replace(profile, trials=records)


def test_the_largest_trial_peak_is_checked_against_the_device_s_own_metric() -> None:
    cpu = _with("cpu", {"peak_rss_mb": 590.0}, {"peak_rss_mb": 812.4})
    assert budget_failure(cpu, 600) == (
        "over_budget",
        "peak RSS 812.4 MB over the 600 MB budget (tune.memory_budget_mb)",
    )
    gpu = _with("cuda:0", {"peak_vram_mb": 612.5, "peak_rss_mb": 3000.0})
    assert budget_failure(gpu, 600.5) == (
        "over_budget",
        "peak VRAM 612.5 MB over the 600.5 MB budget (tune.memory_budget_mb)",
    )
    assert budget_failure(_with("cuda:0", {"peak_vram_mb": 600.0}), 600) is None
    assert budget_failure(_with("cpu", {"peak_rss_mb": 10.0}, {"peak_rss_mb": 12.0}), 600) is None


WORLD = Path(__file__).parents[1] / "fixtures" / "docs" / "world_cpu_straggler" / "profile.json"


def test_on_several_ranks_the_budget_holds_for_each_rank() -> None:
    profile = load(str(WORLD))
    assert profile.world is not None and profile.metrics["peak_rss_mb"] == 797.7  # rank 0's
    ranks = list(profile.world.ranks)
    ranks[1] = msgspec.structs.replace(ranks[1], peak_rss_mb=905.2)
    world = msgspec.structs.replace(profile.world, ranks=ranks)
    profile = msgspec.structs.replace(profile, world=world)
    assert budget_failure(profile, 900) == (
        "over_budget",
        "rank 1's peak RSS 905.2 MB over the 900 MB budget (tune.memory_budget_mb)",
    )
    assert budget_failure(profile, 905.2) is None
    ranks[1] = msgspec.structs.replace(ranks[1], peak_rss_mb=None)
    unmeasured = msgspec.structs.replace(profile, world=msgspec.structs.replace(world, ranks=ranks))
    assert budget_failure(unmeasured, 900) == (
        "usage",
        "tune.memory_budget_mb cannot be checked: the profile has no peak_rss_mb (see its notes) "
        "(unset tune.memory_budget_mb, or measure where the peak can be measured)",
    )


@pytest.mark.parametrize(
    ("device", "metrics"),
    [("cpu", [{"peak_rss_mb": None}]), ("cpu", [{"peak_rss_mb": 5.0}, {}]), ("cuda:0", [{}])],
)
def test_a_peak_that_was_not_measured_cannot_read_as_a_fit(
    device: str, metrics: list[dict[str, Any]]
) -> None:
    metric = "peak_vram_mb" if device.startswith("cuda") else "peak_rss_mb"
    profile = _with(device, *metrics)
    if device.startswith("cuda"):
        profile = msgspec.structs.replace(profile, metrics={})
    assert budget_failure(profile, 600) == (
        "usage",
        f"tune.memory_budget_mb cannot be checked: the profile has no {metric} (see its notes) "
        "(unset tune.memory_budget_mb, or measure where the peak can be measured)",
    )


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, torch.device]]:
    """A CUDA device 0 of GPU_BYTES as torch.cuda reports it; the fractions set on it."""
    gpu = torch.device("cuda", 0)
    fractions: list[tuple[float, torch.device]] = []

    class Properties:
        total_memory = GPU_BYTES

    monkeypatch.setattr(device_module, "resolve_device", lambda name: gpu)
    monkeypatch.setattr(device_module, "select_device", lambda device: None)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: Properties())
    monkeypatch.setattr(
        torch.cuda,
        "set_per_process_memory_fraction",
        lambda fraction, device: fractions.append((fraction, device)),
    )
    return fractions


def test_a_cuda_point_s_allocator_is_capped_at_the_budget_and_then_freed(
    fake_gpu: list[tuple[float, torch.device]],
) -> None:
    with capped_device_memory(600, "cuda:0"):
        assert fake_gpu == [(600 * 10**6 / GPU_BYTES, torch.device("cuda", 0))]
    assert fake_gpu[1:] == [(1.0, torch.device("cuda", 0))]


def test_an_oom_under_the_cap_names_the_budget(
    fake_gpu: list[tuple[float, torch.device]],
) -> None:
    with (
        pytest.raises(OutOfMemoryError) as info,
        capped_device_memory(600, "cuda:0"),
    ):
        raise OutOfMemoryError("out of memory in stage 'measure'", hint="lower --batch")
    message = "out of memory in stage 'measure' under the 600 MB budget (tune.memory_budget_mb)"
    assert (info.value.message, info.value.hint, info.value.code) == (
        message,
        "lower --batch",
        "out_of_memory",
    )
    assert [f for f, _ in fake_gpu] == [0.075, 1.0]


def test_a_budget_above_the_device_s_memory_is_refused(
    fake_gpu: list[tuple[float, torch.device]],
) -> None:
    with pytest.raises(UsageError) as info, capped_device_memory(8000.5, "cuda:0"):
        pass
    assert info.value.message == (
        "tune.memory_budget_mb 8000.5 is above the 8000.0 MB of cuda:0: this device cannot "
        "tell what fits the budget"
    )
    assert info.value.hint == (
        "lower tune.memory_budget_mb, or measure on a device with that much memory"
    )
    assert fake_gpu == []


def test_no_budget_sets_no_cap(fake_gpu: list[tuple[float, torch.device]]) -> None:
    with capped_device_memory(None, "cuda:0"):
        pass
    assert fake_gpu == []


def test_a_cpu_point_sets_no_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    fractions: list[float] = []
    monkeypatch.setattr(
        torch.cuda, "set_per_process_memory_fraction", lambda f, device: fractions.append(f)
    )
    with capped_device_memory(600, "cpu"):
        pass
    assert fractions == []
