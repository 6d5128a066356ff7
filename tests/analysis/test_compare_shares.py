"""compare on shares and single runs: a share (GPU util, CPU wait) moves in percentage points
with a noise floor, never by a ratio; the advice for a single run names the command that made
the profile (`infer --repeat N` for inference, 1.6.0's `run --repeat N` for training)."""

from __future__ import annotations

import json

import pytest

from libreyolo.analysis.compare import SINGLE_RUN, compare
from libreyolo.analysis.delta import SHARE_NOISE_POINTS, ShareDelta
from libreyolo.render.jsondoc import to_json_text
from libreyolo.render.text import to_lines
from tests.analysis.test_contention import _profile

# Waits per 20 ms of CPU: 0.02 ms -> CPU wait 0.1 %, 0.18 ms -> 0.9 %, 18.5 ms -> 48.1 %.
QUIET, LESS_QUIET, BUSY = [0.02] * 4, [0.18] * 4, [18.5] * 4


def test_a_small_cpu_wait_move_is_points_within_noise_not_a_ratio() -> None:
    result = compare(_profile(QUIET), _profile(LESS_QUIET))
    wait = result.cpu_wait_frac
    assert (wait.before, wait.after) == (0.001, 0.009)
    assert wait.change is None  # not (0.009 - 0.001) / 0.001 = +800 %
    assert wait.change_points == 0.8 and wait.moved is False
    assert "CPU wait       0% -> 1% (+0.8 points, within noise)" in to_lines(result)
    doc = json.loads(to_json_text(result, source=("a", "b")))
    assert doc["cpu_wait_frac"] == {
        "before": 0.001,
        "after": 0.009,
        "change": None,
        "change_points": 0.8,
        "moved": False,
    }


def test_a_large_cpu_wait_move_is_called_in_points() -> None:
    result = compare(_profile(QUIET), _profile(BUSY))
    wait = result.cpu_wait_frac
    assert (wait.before, wait.after) == (0.001, 0.481)
    assert wait.change_points == 48.0 and wait.moved is True
    assert "CPU wait       0% -> 48% (+48.0 points)" in to_lines(result)


@pytest.mark.parametrize(
    ("before", "after", "moved"),
    [(0.20, 0.2199, False), (0.20, 0.22, True), (0.5, 0.48, True), (0.5, None, None)],
)
def test_the_share_noise_floor(before: float, after: float | None, moved: bool | None) -> None:
    delta = ShareDelta(before, after)
    assert SHARE_NOISE_POINTS == 2.0
    assert delta.moved is moved
    assert delta.change is None


def test_gpu_util_is_a_share_too() -> None:
    result = compare(_profile(QUIET), _profile(QUIET))
    assert isinstance(result.gpu_util, ShareDelta)


@pytest.mark.parametrize(
    ("modes", "text"),
    [
        (("training", "training"), SINGLE_RUN),
        (("inference", "inference"), "single run, use 'infer --repeat N' for a significance call"),
        (
            ("training", "inference"),
            "single run, use 'run --repeat N' and 'infer --repeat N' for a significance call",
        ),
    ],
)
def test_single_run_advice_names_the_measuring_command(modes: tuple[str, str], text: str) -> None:
    before, after = (_profile(QUIET, mode=mode) for mode in modes)
    assert compare(before, after).significance.text == text
    assert SINGLE_RUN == "single run, use 'run --repeat N' for a significance call"  # 1.6.0
