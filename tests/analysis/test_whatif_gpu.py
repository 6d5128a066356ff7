"""What-if arithmetic on the real GPU traces, recomputed by hand from each profile's own numbers.

The host/launch regime (gpu_util < 0.8: A100, H100) saves removed launches x the measured host cost
per launch, floored at the GPU work that remains; the compute regime (V100, gpu_util 0.97) saves
the removed GPU time and nothing for launches alone. Results must equal the hand computation up to
the output's rounding. tests/analysis/test_gpu_fixtures.py checks the regimes are told apart.
"""

from __future__ import annotations

import pytest

from libreyolo.analysis.verdict import UTIL_COMPUTE
from libreyolo.analysis.whatif import NOT_CHECKED
from libreyolo.cli.sources import open_profile
from libreyolo.document.model import Profile
from tests.conftest import invoke
from tests.fixture_files import fixture_dir

FOLDER = fixture_dir("gpu_traces")
A100 = "hta_a100_ddp_train_3steps.json.gz"  # host / launch, 3 steps
H100 = "tracelens_h100_vit_infer_1step.json.gz"  # host / launch, 1 step
V100 = "hta_v100_ddp_train_5steps_ns.json.gz"  # compute, 5 steps


@pytest.fixture(scope="module")
def profiles() -> dict[str, Profile]:
    return {name: open_profile(str(FOLDER / name)) for name in (A100, H100, V100)}


def _what_if(name: str, *flags: str) -> dict:
    result = invoke(["profile", "what-if", str(FOLDER / name), *flags, "--json"])
    assert result.status == 0, result.stderr
    return result.json()  # type: ignore[return-value]


def _numbers(profile: Profile) -> tuple[float, float, float, float, int]:
    """(step ms, GPU busy ms per step, dataload ms, host µs per launch, steps) as stored."""
    m, trace = profile.metrics, profile.trace
    assert trace is not None
    return (
        m["step_ms"],
        m["gpu_busy_ms"],
        m["dataload_ms"] or 0.0,
        trace.launches.host_us_per_launch,
        max(trace.num_steps, 1),
    )  # type: ignore[return-value]


def _category(profile: Profile, name: str, steps: int) -> tuple[float, int]:
    """(GPU ms, launches) of one kernel category per step."""
    trace = profile.trace
    assert trace is not None
    gpu_ms = next(c.total_ms for c in trace.categories if c.name == name) / steps
    calls = sum(k.num_calls for k in trace.kernels if k.category == name)
    return gpu_ms, round(calls / steps)


def test_the_fixtures_cover_both_regimes(profiles) -> None:
    assert profiles[A100].metrics["gpu_util"] < UTIL_COMPUTE
    assert profiles[H100].metrics["gpu_util"] < UTIL_COMPUTE
    assert profiles[V100].metrics["gpu_util"] >= UTIL_COMPUTE


@pytest.mark.parametrize(("name", "launches"), [(A100, 100), (A100, 1), (H100, 50)])
def test_host_bound_removed_launches_save_their_host_cost(profiles, name, launches) -> None:
    step, busy, dataload, cost_us, _ = _numbers(profiles[name])
    expected = step - launches * cost_us / 1000
    assert expected > busy + dataload  # not the floor case
    out = _what_if(name, "--remove-launches", str(launches))
    assert out["regime"] == "host / launch"
    assert out["removed"] == {"gpu_ms": 0.0, "launches": launches}
    assert out["step_ms"] == {"now": step, "projected": round(expected, 1)}
    assert out["checked"] == NOT_CHECKED


@pytest.mark.parametrize(("name", "launches"), [(A100, 100_000), (H100, 10_000)])
def test_host_bound_saving_is_floored_at_the_remaining_busy_time(profiles, name, launches) -> None:
    step, busy, dataload, cost_us, _ = _numbers(profiles[name])
    assert step - launches * cost_us / 1000 < busy + dataload  # more than can be saved
    out = _what_if(name, "--remove-launches", str(launches))
    assert out["step_ms"]["projected"] == round(busy + dataload, 1)


@pytest.mark.parametrize(("name", "category"), [(A100, "norm"), (H100, "gemm / conv")])
def test_host_bound_removed_category_saves_its_launches(profiles, name, category) -> None:
    step, busy, dataload, cost_us, steps = _numbers(profiles[name])
    gpu_ms, launches = _category(profiles[name], category, steps)
    assert launches > 0
    expected = max(step - launches * cost_us / 1000, busy - gpu_ms + dataload)
    out = _what_if(name, "--remove-category", category)
    assert out["regime"] == "host / launch"
    assert out["removed"] == {"gpu_ms": round(gpu_ms, 2), "launches": launches}
    assert out["step_ms"] == {"now": step, "projected": round(expected, 1)}


def test_host_bound_removed_category_floors_at_the_gpu_work_left(profiles) -> None:
    """Removing H100's gemm kernels and far more launches: what is left is the other kernels."""
    _, busy, dataload, _, steps = _numbers(profiles[H100])
    gpu_ms, _ = _category(profiles[H100], "gemm / conv", steps)
    out = _what_if(H100, "--remove-category", "gemm", "--remove-launches", "10000")
    assert out["step_ms"]["projected"] == round(busy - gpu_ms + dataload, 1)


@pytest.mark.parametrize("launches", [1, 100, 100_000])
def test_compute_bound_removed_launches_save_nothing(profiles, launches) -> None:
    step = profiles[V100].metrics["step_ms"]
    out = _what_if(V100, "--remove-launches", str(launches))
    assert out["regime"] == "compute"
    assert out["removed"] == {"gpu_ms": 0.0, "launches": launches}
    assert out["step_ms"] == {"now": step, "projected": round(step, 1)}


@pytest.mark.parametrize("category", ["gemm / conv", "norm", "elementwise"])
def test_compute_bound_removed_category_saves_its_gpu_time(profiles, category) -> None:
    step, busy, _, _, steps = _numbers(profiles[V100])
    gpu_ms, launches = _category(profiles[V100], category, steps)
    expected = max(step - gpu_ms, step - busy)
    out = _what_if(V100, "--remove-category", category)
    assert out["removed"] == {"gpu_ms": round(gpu_ms, 2), "launches": launches}
    assert out["step_ms"] == {"now": step, "projected": round(expected, 1)}
    assert out["checked"] == NOT_CHECKED
