"""The knee search's ranking windows end to end on the CPU: each new size is ranked on two
short trials, and the answer (and the best) is measured again on the series' own window, into
the same point folder, before it is recommended."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from libreyolo.document.sweep_io import read_tune_record
from libreyolo.document.tune_model import TuneRecord, TuneSettings
from libreyolo.errors import UsageError
from libreyolo.sweep.tune_series import Series, check_settings, rank_window
from tests.sweep.helpers import tune_argv


def _json(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8")))


RANKED = TuneSettings(rank_steps=10)


def _series(mode: str = "infer", steps: int = 8, repeat: int = 3) -> Series:
    return Series((), (), mode, repeat, steps, 64, True, None, TuneSettings())


@pytest.mark.parametrize(
    ("series", "settings", "window"),
    [
        (_series(steps=40), RANKED, ("window.runs=10", "window.repeat=2")),
        (_series("run", 8), TuneSettings(rank_steps=2), ("window.steps=2", "window.repeat=2")),
        (_series("run", 8), TuneSettings(rank_steps=3), ("window.steps=3", "window.repeat=2")),
        (_series("run", 8), TuneSettings(), ()),  # the default: no ranking window
        (_series("run", 2), TuneSettings(rank_steps=2), ()),  # no shorter than the window
        (_series("run", 8), TuneSettings(rank_steps=8), ()),
        (_series("run", 8, repeat=2), RANKED, ()),  # no fewer trials than 2
        (_series(steps=40), TuneSettings(goal="maxfit", rank_steps=10), ()),  # memory: full
        (_series(steps=40), TuneSettings(goal="latency", rank_steps=10), ()),  # a percentile
    ],
)
def test_the_ranking_window_is_shorter_or_there_is_none(
    series: Series, settings: TuneSettings, window: tuple[str, ...]
) -> None:
    assert rank_window(series, settings) == window


@pytest.mark.parametrize("steps", [1, -2])
def test_a_ranking_window_of_one_step_is_refused(steps: int) -> None:
    with pytest.raises(UsageError) as refused:
        check_settings(TuneSettings(rank_steps=steps))
    assert str(refused.value) == (
        f"tune.rank_steps must be 0 (no ranking window) or at least 2 (got {steps}): a window "
        "measures one unsynced and one synced step"
    )


def test_a_ranked_knee_search_recommends_a_batch_measured_on_the_full_window(
    tmp_path: Path,
) -> None:
    search = ("window.repeat=3", "window.runs=8", "tune.batch_max=4", "tune.batch_step=1")
    search += ("tune.rank_steps=2",)
    done = subprocess.run(
        tune_argv(tmp_path, *search), capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    assert isinstance(read_tune_record(tmp_path / "tune.json"), TuneRecord)
    record = _json(tmp_path / "tune.json")
    (series,) = record["series"]
    path = series["path"]
    ranked = [step for step in path if step["ranked"]]
    full = [step for step in path if not step["ranked"]]
    # every size is ranked first, on two trials; what could change the answer is measured again
    assert sorted(step["batch"] for step in ranked) == sorted({step["batch"] for step in path})
    assert all(step["trials"] == 2 for step in ranked)
    assert full and all(step["trials"] == 3 for step in full)
    for order, step in enumerate(path):  # a full window only after that batch's ranking
        if not step["ranked"]:
            assert any(s["ranked"] and s["batch"] == step["batch"] for s in path[:order])
    (recommended,) = record["recommended"]
    answer = recommended["batch"]
    assert answer == series["batch"] and answer in [step["batch"] for step in full]
    # the answer and the best of each batch's latest measurement: both on the full window
    latest = {step["batch"]: step for step in path}
    best = max(latest.values(), key=lambda step: (step["img_per_s"], -step["batch"]))
    assert not latest[answer]["ranked"] and not best["ranked"]
    # the folder holds the full window's measurement it was recommended on
    status = _json(tmp_path / recommended["point"] / "status.json")
    assert status["overrides"][-2:] == [f"batch={answer}", "sweep.resume=false"]
    assert "window.repeat=2" not in status["overrides"]  # no ranking window
    assert len(_json(tmp_path / recommended["point"] / status["profile"])["trials"]) == 3
    # each point's line says which window it was measured on
    lines = [line for line in done.stdout.splitlines() if line.startswith("b")]
    windows = ["(3 trials of 8 runs)" if not s["ranked"] else "(2 trials of 2 runs)" for s in path]
    assert [line.split(": ok ", 1)[1] for line in lines[: len(path)]] == windows, done.stdout
