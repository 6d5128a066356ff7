"""`hydra/launcher=ray` against a real Ray cluster: a head and a second node on loopback.

The module starts the cluster once (`ray start`, two processes: a head with 2 CPUs, a node with
1), runs CPU sweeps into it with only the address given, and stops it with `ray stop --force`
whatever happens. Ray's files (HOME, its temp folder) stay under the test's own folder.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sweep.helpers import tiny_sweep_argv

pytest.importorskip("hydra_plugins.hydra_ray_launcher")
pytestmark = pytest.mark.slow

RAY = str(Path(sys.executable).with_name("ray"))
HINT = "(give the point fewer resources or add such a node)"
# Lines Ray itself writes to the driver's stderr: a process's forwarded log ("(raylet) ...",
# "(pid=12) ...") or its logger's timestamped warnings (a full disk, a slow node). They may come
# after the sweep's own last line, which is the one these tests read.
RAY_OWN_LINE = re.compile(r"^\(|^\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d")


def _last_own_line(err: str) -> str:
    """The last line of `err` the sweep wrote, Ray's own log lines skipped."""
    return [line for line in err.strip().splitlines() if not RAY_OWN_LINE.match(line)][-1]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ray_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"RAY_ADDRESS", "RAY_AUTH_MODE"}}
    (root / "home").mkdir(parents=True, exist_ok=True)
    (root / "t").mkdir(exist_ok=True)
    env.update(HOME=str(root / "home"), RAY_TMPDIR=str(root / "t"), RAY_AUTH_MODE="disabled")
    return env


def _ray(env: dict[str, str], *args: str) -> None:
    subprocess.run([RAY, *args], env=env, check=True, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """The head's `127.0.0.1:port` and the environment the sweeps run in."""
    env = _ray_env(tmp_path_factory.mktemp("ray"))
    address = f"127.0.0.1:{_free_port()}"
    common = ("--node-ip-address=127.0.0.1", "--disable-usage-stats")
    try:
        _ray(env, "start", "--head", f"--port={address.split(':')[1]}", "--num-cpus=2",
             "--include-dashboard=false", f"--temp-dir={env['RAY_TMPDIR']}", *common)  # fmt: skip
        _ray(env, "start", f"--address={address}", "--num-cpus=1", *common)
        yield address, env
    finally:
        subprocess.run([RAY, "stop", "--force"], env=env, capture_output=True, timeout=120)


def _start(
    sweep_dir: Path, env: dict[str, str], *overrides: str, isolate: bool = False
) -> subprocess.Popen[str]:
    argv = tiny_sweep_argv(sweep_dir, "imgsz=64", "hydra/launcher=ray", *overrides, isolate=isolate)
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
    return proc.returncode, out, err


def _status(point: Path) -> dict[str, object]:
    data = json.loads((point / "status.json").read_text("utf-8"))
    assert isinstance(data, dict)
    return data


def test_four_cpu_points_run_on_the_two_nodes_given_only_the_address(
    cluster: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    address, env = cluster
    names = [f"b{b}_s64_amp1" for b in (1, 2, 3, 4)]
    code, out, err = _finish(
        _start(tmp_path, env, f"hydra.launcher.ray.init.address={address}", "batch=1,2,3,4")
    )
    assert code == 0, err[-3000:]
    assert "Traceback" not in err and "validated against ConfigStore schema" not in err
    assert all((tmp_path / n / "infer" / "profile.json").is_file() for n in names)
    assert (tmp_path / "sweep.html").is_file() and "all 4 points ok" in out
    data = json.loads((tmp_path / "sweep.json").read_text("utf-8"))
    assert sorted(data["points"]) == names and data["num_ok"] == 4
    statuses = [_status(tmp_path / n) for n in names]
    # Up to three points at a time on the cluster's 3 CPUs; the cpu lease serialised them.
    intervals = sorted((s["lease_acquired_at"], s["lease_released_at"]) for s in statuses)
    for (_, end), (start, _) in itertools.pairwise(intervals):
        assert end <= start, intervals
    assert {s["held_device"] for s in statuses} == {"cpu"}
    assert len({s["pid"] for s in statuses}) == 4  # max_calls 1: a fresh worker per point


def test_sigterm_ends_a_ray_sweep_like_the_basic_launcher(
    cluster: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    address, env = cluster
    # RAY_ADDRESS alone picks the cluster; the long window keeps the points in flight, each in
    # its child process (Ray's cancel must reach a point that waits on its child).
    env = {**env, "RAY_ADDRESS": address}
    proc = _start(tmp_path, env, "window.runs=100000", "batch=1,2", isolate=True)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("b*_s64_amp1/point.log")):  # a child is measuring
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    time.sleep(2.0)  # into the child's measurement
    proc.send_signal(signal.SIGTERM)
    code, out, err = _finish(proc)
    assert code == 143, err[-3000:]
    assert "0 of 2 points ok" in out
    assert "Traceback" not in err and "SIGTERM" not in err
    assert _last_own_line(err).startswith("interrupted: 0 of 2 points done")
    data = json.loads((tmp_path / "sweep.json").read_text("utf-8"))
    assert data["num_ok"] == 0 and sorted(data["points"]) == ["b1_s64_amp1", "b2_s64_amp1"]
    started = [p.parent for p in tmp_path.glob("b*_s64_amp1/point.json")]
    assert started and all(_status(p)["status"] == "interrupted" for p in started)


@pytest.mark.parametrize(
    ("override", "reason"),
    [
        ("hydra.launcher.ray.remote.num_gpus=1", "no node has 1 GPU and 1 CPU"),
        # CPUs alone: test_launchers' wording cases, on the same resource check (7 s saved)
    ],
)
def test_a_point_no_node_can_hold_refuses_the_sweep_at_once(
    cluster: tuple[str, dict[str, str]], tmp_path: Path, override: str, reason: str
) -> None:
    address, env = cluster
    code, _, err = _finish(
        _start(tmp_path, env, f"hydra.launcher.ray.init.address={address}", override, "batch=1")
    )
    assert code == 2
    assert _last_own_line(err) == f"{reason}: the cluster has cpu=3, gpu=0 {HINT}"
    assert not list(tmp_path.glob("b*/point.json"))  # nothing was submitted


def test_a_dead_address_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = _ray_env(tmp_path / "ray")
    dead = f"127.0.0.1:{_free_port()}"
    code, _, err = _finish(_start(tmp_path, env, f"hydra.launcher.ray.init.address={dead}"))
    assert code == 2
    assert err.strip().splitlines() == [
        f"cannot reach the Ray cluster at {dead}: connection refused "
        "(start one with `ray start --head`, or leave hydra.launcher.ray.init.address unset)"
    ]
