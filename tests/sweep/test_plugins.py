"""Hydra's launcher and sweeper plug-ins driving `libreyolo-sweep`: joblib and Optuna end to end
on a 2-point CPU sweep, nevergrad refused with its reason; and the pieces that make them work
(the child's start method, the value a failed point returns, the trusted samplers, the submitit
log folder).

The basic launcher's 2-point sweeps are test_sweep.py's; submitit's and Ray's are
test_launchers.py's (and test_ray_cluster.py's).
"""

from __future__ import annotations

import json
import math
import multiprocessing
import multiprocessing.context
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from libreyolo.config.schema import register_schemas
from libreyolo.errors import UsageError
from libreyolo.measure.fresh import start_method
from libreyolo.sweep import plugins
from libreyolo.sweep.objective import PointObjective, sweeper_value
from libreyolo.sweep.plugins import check_plugins
from libreyolo.sweep.point import crash_reason
from libreyolo.sweep.trust import Trust, composed_hydra, untrusted
from tests.sweep.helpers import tiny_sweep_argv

NAMES = ["b1_s64_amp1", "b2_s64_amp1"]


def _objective(img_per_s: float | None) -> PointObjective:
    """A point's objective: measured at `img_per_s`, or (None) failed out of memory."""
    facts: dict[str, Any] = dict.fromkeys(PointObjective.__slots__)
    fits = img_per_s is not None
    facts |= {"status": "ok" if fits else "failed", "fits": fits, "trials_img_per_s": ()}
    facts |= {"reused": False, "contended": False}
    return PointObjective(img_per_s, **facts)


def _sweep(
    sweep_dir: Path, *overrides: str, isolate: bool = False
) -> subprocess.CompletedProcess[str]:
    argv = tiny_sweep_argv(sweep_dir, "imgsz=64", *overrides, isolate=isolate)
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


def _assert_two_ok_points(sweep_dir: Path, done: subprocess.CompletedProcess[str]) -> list[Any]:
    """Exit 0, `sweep.json` over both points, each ok with its profile; their status records."""
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((sweep_dir / "sweep.json").read_text("utf-8"))
    assert sorted(data["points"]) == NAMES and data["num_failed"] == 0
    statuses = [json.loads((sweep_dir / n / "status.json").read_text("utf-8")) for n in NAMES]
    for name, status in zip(NAMES, statuses, strict=True):
        assert status["status"] == "ok", status
        assert (sweep_dir / name / status["profile"]).is_file()
    return statuses


@pytest.mark.slow
def test_joblib_points_are_measured_in_fresh_children_of_the_loky_workers(tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    # loky reuses its workers across points: each point needs its own child (sweep.isolate).
    done = _sweep(
        tmp_path, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "batch=1,2", isolate=True
    )
    statuses = _assert_two_ok_points(tmp_path, done)
    assert len({s["pid"] for s in statuses}) == 2
    for name in NAMES:
        assert (tmp_path / name / "point.log").is_file()
    assert "cannot find context" not in done.stderr


@pytest.mark.slow
def test_optuna_max_maximises_img_per_s_with_no_trust_flag(tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    grid = ("hydra/sweeper=optuna_max", "hydra/sweeper/sampler=grid", "hydra.sweeper.n_trials=2")
    done = _sweep(tmp_path, *grid, "batch=1,2")
    _assert_two_ok_points(tmp_path, done)
    points = json.loads((tmp_path / "sweep.json").read_text("utf-8"))["points"]
    rates = {p["batch"]: p["metrics"]["img_per_s"] for p in points.values()}
    best = yaml.safe_load((tmp_path / "optimization_results.yaml").read_text("utf-8"))
    assert best["best_value"] == max(rates.values())
    assert rates[best["best_params"]["batch"]] == best["best_value"]


def test_nevergrad_is_refused_in_one_line_before_hydra_starts(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "libreyolo.sweep", "-m", "hydra/sweeper=nevergrad", "batch=1,2"]
    argv.append(f"hydra.sweep.dir={tmp_path / 'sweep'}")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr == (
        "hydra/sweeper=nevergrad: every hydra-nevergrad-sweeper release (1.2.0) does not import "
        "on Python 3.11+ and pins numpy<1.20 (use hydra/sweeper=optuna_max or "
        "hydra/sweeper=tune)\n"
    )
    assert not (tmp_path / "sweep").exists()


def test_optunas_own_minimising_default_is_refused_before_any_point(tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    argv = [sys.executable, "-m", "libreyolo.sweep", "-m", "hydra/sweeper=optuna", "batch=1,2"]
    argv.append(f"hydra.sweep.dir={tmp_path / 'sweep'}")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "hydra.sweeper.direction=minimize: each point returns one value, its img/s, and higher "
        "is better (use hydra/sweeper=optuna_max, or hydra.sweeper.direction=maximize)\n"
    )
    assert not (tmp_path / "sweep").exists()


@pytest.mark.parametrize(
    ("direction", "refused"),
    [
        (None, False),
        ("maximize", False),
        (["maximize"], False),
        ("minimize", True),
        (["maximize", "minimize"], True),
    ],
)
def test_only_one_maximised_value_is_accepted(direction: object, refused: bool) -> None:
    if refused:
        with pytest.raises(UsageError, match="each point returns one value, its img/s"):
            plugins.check_direction(direction)
    else:
        plugins.check_direction(direction)


def test_an_installed_nevergrad_release_is_refused_for_every_sweep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(plugins, "_installed", lambda distribution: "1.2.0")
    with pytest.raises(UsageError) as refused:
        check_plugins(["-m", "batch=1,2"])
    assert refused.value.message == (
        "hydra-nevergrad-sweeper 1.2.0 is installed and does not import on Python 3.11+ and "
        "pins numpy<1.20: every sweep stops when Hydra imports it"
    )
    assert refused.value.hint.startswith("pip uninstall hydra-nevergrad-sweeper; ")
    monkeypatch.setattr(plugins, "_installed", lambda distribution: "1.3.0")  # a fixed release
    check_plugins(["-m", "hydra/sweeper=nevergrad"])


class _Foreign(multiprocessing.context.BaseContext):
    """A start method a stdlib child cannot replay, like loky's."""

    _name = "libreyolo-test-foreign"


def test_a_child_starts_under_its_own_start_method_and_the_workers_comes_back() -> None:
    name = _Foreign._name
    multiprocessing.context._concrete_contexts[name] = _Foreign()  # type: ignore[attr-defined]
    before = multiprocessing.get_start_method(allow_none=True)
    try:
        multiprocessing.set_start_method(name, force=True)
        with start_method("forkserver"):
            assert multiprocessing.get_start_method() == "forkserver"
        assert multiprocessing.get_start_method() == name
        multiprocessing.set_start_method("spawn", force=True)
        with start_method("forkserver"):  # a stdlib default is left alone
            assert multiprocessing.get_start_method() == "spawn"
    finally:
        multiprocessing.set_start_method(before, force=True)
        del multiprocessing.context._concrete_contexts[name]  # type: ignore[attr-defined]


def test_a_child_that_never_started_says_so() -> None:
    assert crash_reason(1, None) == (
        "child process exited 1 before it started measuring (multiprocessing could not start "
        "it; its error is on the sweep's stderr)"
    )
    assert crash_reason(-9, "") == "child process exited -9 (signal SIGKILL): no output"
    assert crash_reason(1, "ValueError: boom\n") == "child process exited 1: ValueError: boom"


@pytest.mark.parametrize(
    ("sweeper", "value"),
    [
        ({"direction": "maximize"}, -math.inf),
        ({"direction": "minimize"}, math.inf),
        ({"_target_": "hydra_plugins.libreyolo_tune_sweeper.tune_sweeper.TuneSweeper"}, None),
        ({}, None),
    ],
)
def test_a_point_without_img_per_s_is_the_worst_value_to_optuna(
    sweeper: dict[str, object], value: float | None
) -> None:
    failed = _objective(None)
    returned = sweeper_value(failed, sweeper)
    if value is None:  # not Optuna's: the point's own NaN, with its facts
        assert returned is failed
    else:
        assert type(returned) is float and returned == value
    measured = _objective(41.0)
    assert sweeper_value(measured, sweeper) is measured


def test_optunas_own_direction_enum_is_read_by_name() -> None:
    direction = pytest.importorskip("hydra_plugins.hydra_optuna_sweeper.config").Direction
    assert sweeper_value(_objective(None), {"direction": direction.maximize}) == -math.inf


def test_the_optuna_samplers_pass_the_trust_check_and_nothing_else_there() -> None:
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    register_schemas()
    hydra = composed_hydra(["-m", "hydra/sweeper=optuna_max", "hydra/sweeper/sampler=cmaes"])
    assert hydra is not None and untrusted(hydra, Trust()) is None
    sweeper = hydra["sweeper"]
    assert isinstance(sweeper, dict) and sweeper["direction"] == "maximize"
    sweeper["sampler"] = {"_target_": "os.system"}
    refused = untrusted(hydra, Trust())
    assert refused is not None
    assert refused.message.startswith("refusing to instantiate hydra.sweeper.sampler._target_")


def test_the_submitit_presets_keep_their_logs_in_one_folder() -> None:
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    register_schemas()
    for preset in ("submitit_local_leased", "slurm"):
        hydra = composed_hydra(["-m", f"hydra/launcher={preset}", "batch=1"])
        assert hydra is not None
        launcher = hydra["launcher"]
        assert isinstance(launcher, dict)
        assert launcher["submitit_folder"] == "${hydra.sweep.dir}/.submitit"
