"""Launcher presets: ray_gpus and submitit_local_leased end to end on CPU, ray and slurm by
composition, and the Ray glue's rules (tests/sweep/test_ray_cluster.py: a real cluster).

The end-to-end cases run `libreyolo-sweep` in a subprocess with a tiny inference window and
check, from each point's `status.json`, which process measured it and when it held the lease.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from libreyolo.sweep.ray_cluster import init_kwargs, point_resources, unschedulable
from libreyolo.sweep.stop import signal_of, stop_on_signals
from tests.sweep.helpers import tiny_sweep_argv


def _sweep(sweep_dir: Path, *overrides: str) -> tuple[int, subprocess.CompletedProcess[str]]:
    """Run a CPU sweep; return the sweep process's pid and its outcome."""
    home = sweep_dir / "home"
    home.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in {"RAY_AUTH_MODE", "RAY_ADDRESS"}}
    env["HOME"] = str(home)  # where ray would write .ray/auth_token
    # Each launcher worker is a fresh process already: no second isolation layer.
    argv = tiny_sweep_argv(sweep_dir, "imgsz=64", *overrides)
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    return proc.pid, subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _statuses(sweep_dir: Path, names: list[str]) -> list[dict[str, Any]]:
    return [json.loads((sweep_dir / n / "status.json").read_text("utf-8")) for n in names]


def _assert_serialised(statuses: list[dict[str, Any]]) -> None:
    """Each point measured under the cpu lease, and no two lease intervals overlap."""
    intervals = sorted((s["lease_acquired_at"], s["lease_released_at"]) for s in statuses)
    for (_, end), (start, _) in itertools.pairwise(intervals):
        assert end <= start, intervals
    for status in statuses:
        assert status["status"] == "ok" and status["held_device"] == "cpu"
        assert 0 < status["measure_s"] <= status["point_s"]


@pytest.mark.slow
def test_ray_gpus_runs_each_point_in_its_own_fresh_worker(tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    names = ["b1_s64_amp1", "b2_s64_amp1", "b3_s64_amp1"]
    # Two GPUs declared (none exist; the points measure on the CPU): two points at a time.
    parent, done = _sweep(
        tmp_path, "hydra/launcher=ray_gpus", "hydra.launcher.ray.init.num_gpus=2", "batch=1,2,3"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    statuses = _statuses(tmp_path, names)
    pids = [s["pid"] for s in statuses]
    # Three distinct workers: with two slots, a reused worker would repeat a pid.
    assert len(set(pids)) == 3 and parent not in pids
    _assert_serialised(statuses)  # the cpu lease serialised the two concurrent workers
    # The parent still wrote the report although the points ran in Ray workers.
    data = json.loads((tmp_path / "sweep.json").read_text("utf-8"))
    assert sorted(data["points"]) == names and data["num_failed"] == 0
    assert "all 3 points ok" in done.stdout
    assert not (tmp_path / "home" / ".ray" / "auth_token").exists()


@pytest.mark.slow
def test_submitit_local_points_are_serialised_by_the_lease(tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    names = ["b1_s64_amp1", "b2_s64_amp1"]
    # submitit_local starts both jobs at once; only the lease keeps them apart.
    parent, done = _sweep(tmp_path, "hydra/launcher=submitit_local_leased", "batch=1,2")
    assert done.returncode == 0, done.stderr[-3000:]
    statuses = _statuses(tmp_path, names)
    pids = {s["pid"] for s in statuses}
    assert len(pids) == 2 and parent not in pids
    _assert_serialised(statuses)
    assert max(s["lease_wait_s"] for s in statuses) > 0.5  # one point did wait for the other
    data = json.loads((tmp_path / "sweep.json").read_text("utf-8"))
    assert sorted(data["points"]) == names and "all 2 points ok" in done.stdout
    logs = tmp_path / ".submitit"  # submitit makes `%j` folders literally: the preset has none
    assert not (logs / "%j").exists()
    assert len(list(logs.glob("*_0_log.out"))) == 2  # one log per job, named by its job id


def _hydra_config(*overrides: str) -> Any:
    from hydra import compose, initialize_config_module

    from libreyolo.config.schema import register_schemas

    register_schemas()
    with initialize_config_module("libreyolo.conf", version_base="1.3"):
        return compose("profile", overrides=list(overrides), return_hydra_config=True).hydra


def test_slurm_preset_gives_each_point_one_gpu_on_an_exclusive_node() -> None:
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    launcher = _hydra_config("hydra/launcher=slurm", "hydra.launcher.partition=gpu").launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert (launcher.gpus_per_node, launcher.tasks_per_node, launcher.nodes) == (1, 1, 1)
    assert launcher.additional_parameters == {"exclusive": True}
    assert launcher.timeout_min == 60 and launcher.array_parallelism == 8
    assert launcher.partition == "gpu"


def test_ray_gpus_preset_gives_each_point_one_gpu_and_a_fresh_worker() -> None:
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    hydra_cfg = _hydra_config("hydra/launcher=ray_gpus", "hydra.launcher.ray.init.num_gpus=4")
    ray = hydra_cfg.launcher.ray
    assert hydra_cfg.launcher._target_.endswith("RayLauncher")
    assert (ray.init.num_gpus, ray.remote.num_gpus, ray.remote.max_calls) == (4, 1, 1)


def test_ray_preset_joins_by_address_and_sizes_each_point_by_its_device() -> None:
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    hydra_cfg = _hydra_config("hydra/launcher=ray", "hydra.launcher.ray.init.address=auto")
    ray = hydra_cfg.launcher.ray
    assert hydra_cfg.launcher._target_.endswith(
        "libreyolo_ray_launcher.ray_launcher.ClusterRayLauncher"
    )
    assert ray.init.address == "auto" and ray.remote.max_calls == 1
    assert (ray.remote.num_cpus, ray.remote.num_gpus) == (None, None)
    gpus = _hydra_config("hydra/launcher=ray_gpus").launcher
    assert gpus._target_ == hydra_cfg.launcher._target_  # ray_gpus: the same, GPUs declared


def test_an_address_drops_the_init_keys_ray_rejects_for_a_running_cluster() -> None:
    init = {"address": None, "num_cpus": 4, "num_gpus": None, "object_store_memory": 78643200}
    assert init_kwargs(init, {}) == {"num_cpus": 4, "object_store_memory": 78643200}
    joined = {"address": "10.0.0.1:6379", "include_dashboard": False}
    assert (
        init_kwargs({**init, "address": "10.0.0.1:6379", "include_dashboard": False}, {}) == joined
    )
    assert init_kwargs(init, {"RAY_ADDRESS": "10.0.0.1:6379"}) == {"address": "10.0.0.1:6379"}


def test_each_point_asks_ray_for_a_gpu_only_when_its_device_is_cuda() -> None:
    remote = {"num_cpus": None, "num_gpus": None, "max_calls": 1}
    assert point_resources("cuda:1", remote) == {"num_cpus": 1, "num_gpus": 1, "max_calls": 1}
    assert point_resources("0", remote) == {"num_cpus": 1, "num_gpus": 1, "max_calls": 1}
    assert point_resources("cpu", remote) == {"num_cpus": 1, "num_gpus": 0, "max_calls": 1}
    assert point_resources("cpu", {**remote, "num_gpus": 1})["num_gpus"] == 1  # as configured


def test_a_request_no_single_node_can_hold_is_named_with_the_cluster() -> None:
    nodes = [{"CPU": 2.0}, {"CPU": 1.0, "GPU": 1.0}]
    total = {"CPU": 3.0, "GPU": 1.0}
    assert unschedulable({"num_cpus": 1, "num_gpus": 1}, nodes, total) is None
    assert unschedulable({"num_cpus": 2, "num_gpus": 1}, nodes, total) == (
        "no node has 1 GPU and 2 CPUs: the cluster has cpu=3, gpu=1"
    )
    assert unschedulable({"num_cpus": 0, "num_gpus": 2}, nodes, total) == (
        "no node has 2 GPUs: the cluster has cpu=3, gpu=1"
    )
    assert unschedulable({"num_cpus": 3, "num_gpus": 0}, nodes, total) == (
        "no node has 3 CPUs: the cluster has cpu=3, gpu=1"  # 3 in all, but never on one node
    )


def test_a_stop_keeps_its_signal_when_ray_reraises_a_bare_interrupt() -> None:
    # ray.get turns the handler's Stopped(SIGTERM) into KeyboardInterrupt(): still 143.
    with pytest.raises(KeyboardInterrupt), stop_on_signals():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    assert signal_of(KeyboardInterrupt()) == signal.SIGTERM


def test_every_sweep_reports_through_the_packaged_callback() -> None:
    callbacks = _hydra_config().callbacks
    assert callbacks.sweep_report._target_ == "libreyolo.sweep.app.SweepReportCallback"
