"""A tune search that cannot run as asked is refused before any job: one line, exit 2, nothing
measured or written."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest

from libreyolo.document.tune_model import TuneSettings
from libreyolo.errors import UsageError
from libreyolo.sweep.tune_series import Series, check_search, check_settings
from tests.sweep.helpers import tune_argv

REPEAT = "window.repeat=3"


@pytest.mark.parametrize(
    ("overrides", "mode", "line"),
    [
        (
            ("batch=1,2",),
            "infer",
            "hydra/sweeper=tune searches the batch itself: batch=1,2 cannot be given (set its "
            "range with tune.batch_min and tune.batch_max)",
        ),
        (
            ("window.repeat=2",),
            "infer",
            "tune.goal=knee needs window.repeat >= 3 (got 2): whether a bigger batch gains is a "
            "significance test on the trials' img/s (add window.repeat=3)",
        ),
        (
            ("tune.batch_max=0", REPEAT),
            "infer",
            "tune.batch_max (0) must be at least tune.batch_min (1)",
        ),
        (
            ("tune.goal=maxfit,knee",),
            "infer",
            "tune.goal=maxfit,knee: a tune search runs with one set of tune.* settings, which "
            "cannot be swept (run one search for each)",
        ),
        (
            ("tune.goal=latency", REPEAT, "tune.max_latency_ms=50"),
            "run",
            "tune.goal=latency needs mode=infer (got mode=run) (add mode=infer)",
        ),
        (
            ("tune.goal=latency", REPEAT),
            "infer",
            "tune.goal=latency needs tune.max_latency_ms (e.g. tune.max_latency_ms=50)",
        ),
        (
            ("device.nproc=2", REPEAT),
            "run",
            "tune.goal=knee on 2 ranks: it tests a gain on window.repeat trials, and a run on "
            "several ranks measures one trial (tune.goal=maxfit searches the global batch on 2 "
            "ranks; for the fastest batch sweep it as a grid: libreyolo-sweep -m batch=2,4,8)",
        ),
        (
            ("device.nproc=2", "tune.goal=maxfit", REPEAT),
            "run",
            "window.repeat=3 on 2 ranks: a run on several ranks measures one trial (add "
            "window.repeat=1)",
        ),
        (
            ("device.nproc=3", "tune.goal=maxfit", "tune.batch_max=100"),
            "run",
            "on 3 ranks the global batch splits evenly, as libreyolo train splits it: "
            "tune.batch_min, tune.batch_max and tune.batch_step must be multiples of 3 (got 1, "
            "100 and 8) (add tune.batch_min=3 tune.batch_step=24 tune.batch_max=99)",
        ),
        (
            ("device=0,1", "tune.goal=maxfit"),
            "run",
            "device=0,1: device is a config group and 0 is none of its options (choose from: "
            "cpu, cuda)",
        ),
        (
            ("tune.goal=latency", REPEAT, "tune.max_latency_ms=50", "tune.percentile=95"),
            "infer",
            "tune.percentile must be 50, 90 or 99 (got 95): the latency percentiles a profile "
            "measures",
        ),
        (
            ("tune.goal=maxfit", "hydra.sweep.subdir=s${imgsz}"),
            "infer",
            "hydra.sweep.subdir 's${imgsz}' does not name the batch: the batches of a search "
            "would share a folder and overwrite each other's profile (name every swept key in "
            "hydra.sweep.subdir (e.g. _${conf}), or leave it unset)",
        ),
    ],
)
def test_a_search_that_cannot_run_is_refused_in_one_line(
    tmp_path: Path, overrides: tuple[str, ...], mode: str, line: str
) -> None:
    sweep = tmp_path / "sweep"
    argv = tune_argv(sweep, *overrides, mode=mode)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", line + "\n")
    assert not [p for p in sweep.rglob("*") if p.is_file()]  # nothing measured or written


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"batch_min": 0}, "tune.batch_min must be at least 1 (got 0)"),
        ({"batch_max": 1 << 21}, "tune.batch_max must be at most 1048576 (got 2097152)"),
        ({"batch_step": 0}, "tune.batch_step must be at least 1 (got 0)"),
        ({"min_gain_pct": -1.0}, "tune.min_gain_pct must be a percentage of at least 0 (got -1)"),
        (
            {"min_gain_pct": math.nan},
            "tune.min_gain_pct must be a percentage of at least 0 (got nan)",
        ),
        (
            {"memory_budget_mb": 0.0},
            "tune.memory_budget_mb must be a positive number of MB (got 0)",
        ),
        (
            {"memory_budget_mb": math.inf},
            "tune.memory_budget_mb must be a positive number of MB (got inf)",
        ),
        (  # whatever the goal: tune.json records it
            {"percentile": 150},
            "tune.percentile must be 50, 90 or 99 (got 150): the latency percentiles a profile "
            "measures",
        ),
    ],
)
def test_settings_no_search_can_run_with_are_refused(
    changes: dict[str, float], message: str
) -> None:
    with pytest.raises(UsageError) as refused:
        check_settings(TuneSettings(**changes))  # type: ignore[arg-type]
    assert refused.value.message == message


def _series(**changes: object) -> Series:
    fields: dict[str, object] = {
        "overrides": ("imgsz=64",),
        "swept": ("imgsz=64",),
        "mode": "infer",
        "repeat": 3,
        "steps": 8,
        "imgsz": 64,
        "amp": True,
        "threads": None,
        "settings": TuneSettings(),
    }
    return Series(**(fields | changes))  # type: ignore[arg-type]


def test_series_must_agree_on_the_mode_and_the_settings() -> None:
    subdir = "b${batch}_s${imgsz}"
    assert check_search([_series(), _series(imgsz=96)], subdir) == TuneSettings()
    with pytest.raises(UsageError, match=r"one mode \(got mode=infer and mode=run\)"):
        check_search([_series(), _series(mode="run")], subdir)
    with pytest.raises(UsageError, match="compose to different tune"):
        check_search([_series(), _series(settings=TuneSettings(batch_max=8))], subdir)
    latency = TuneSettings(goal="latency", max_latency_ms=-1.0)
    with pytest.raises(UsageError, match=r"tune.max_latency_ms must be a positive number"):
        check_search([_series(settings=latency)], subdir)
    assert check_search([_series()], "p${hydra.job.num}") == TuneSettings()  # numbered: unique
