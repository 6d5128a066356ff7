"""The per-device lease: exclusive across processes, a clear timeout, GPU choice, freed on death."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from libreyolo.errors import ExitStatus, NoProfileError, UsageError
from libreyolo.sweep.lease import default_lock_dir, device_lease, gpu_candidates

# A process that takes the lease, says so, holds it for `hold` seconds and prints its interval.
HOLDER = """
import json, sys, time
from libreyolo.sweep.lease import device_lease
device, lock_dir, hold = sys.argv[1], sys.argv[2], float(sys.argv[3])
with device_lease(device, lock_dir=lock_dir, timeout_s=30, poll_s=0.02) as lease:
    start = time.time()
    print("held", lease.held_device, flush=True)
    time.sleep(hold)
    end = time.time()
print(json.dumps([start, end]), flush=True)
"""


def _holder(device: str, lock_dir: Path, hold: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, device, str(lock_dir), str(hold)],
        stdout=subprocess.PIPE,
        text=True,
    )


def _wait_held(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    assert line[0] == "held", line
    return line[1]


def test_two_processes_never_hold_the_same_device_at_once(tmp_path: Path) -> None:
    procs = [_holder("cpu", tmp_path, 0.4) for _ in range(2)]
    intervals = []
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        intervals.append(json.loads(out.splitlines()[-1]))
    first, second = sorted(intervals)
    assert first[0] < first[1] <= second[0] < second[1]  # the second waited for the first
    assert (tmp_path / "cpu.lock").is_file()


def test_timeout_fails_with_a_clear_reason(tmp_path: Path) -> None:
    holder = _holder("cpu", tmp_path, 30)
    try:
        assert _wait_held(holder) == "cpu"
        started = time.monotonic()
        with (
            pytest.raises(NoProfileError) as caught,
            device_lease("cpu", lock_dir=tmp_path, timeout_s=0.3, poll_s=0.05),
        ):
            pytest.fail("the lease must not be granted while another process holds it")
        assert time.monotonic() - started >= 0.3
    finally:
        holder.kill()
        holder.communicate()
    err = caught.value
    assert err.status == ExitStatus.NO_PROFILE and err.code == "no_profile"
    assert err.message.startswith("no lease on cpu within 0.3 s")
    assert str(tmp_path) in err.message and "sweep.lease_timeout_s" in (err.hint or "")


def test_the_lock_is_freed_when_its_holder_is_killed(tmp_path: Path) -> None:
    holder = _holder("0", tmp_path, 60)
    assert _wait_held(holder) == "gpu0"
    with (
        pytest.raises(NoProfileError),
        device_lease("0", lock_dir=tmp_path, timeout_s=0.2, poll_s=0.05),
    ):
        pass
    os.kill(holder.pid, signal.SIGKILL)
    holder.communicate()
    with device_lease("0", lock_dir=tmp_path, timeout_s=5, poll_s=0.05) as lease:
        assert lease.held_device == "gpu0"


def test_gpu_candidates_are_sweep_gpus_among_the_visible_ones() -> None:
    # sweep.gpus wins, filtered by what the launcher made visible (as the schema documents)
    assert gpu_candidates("0", [3, 5], {"CUDA_VISIBLE_DEVICES": "2,3,5"}) == ["3", "5"]
    assert gpu_candidates("0", [4, 5], {}) == ["4", "5"]
    assert gpu_candidates("0", None, {"CUDA_VISIBLE_DEVICES": "2,3"}) == ["2", "3"]
    assert gpu_candidates("cuda:1", None, {}) == ["1"]
    assert gpu_candidates("cuda", None, {"CUDA_VISIBLE_DEVICES": ""}) == ["0"]


def test_sweep_gpus_that_are_not_visible_are_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"sweep.gpus 4,5 names none of the GPUs .*=2,3"):
        gpu_candidates("0", [4, 5], {"CUDA_VISIBLE_DEVICES": "2,3"})


def test_a_busy_visible_gpu_makes_the_next_point_take_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")  # as Ray or submitit would set it
    with device_lease("0", lock_dir=tmp_path, timeout_s=1) as first:
        assert (first.held_device, first.child_env()) == ("gpu3", {"CUDA_VISIBLE_DEVICES": "3"})
        assert first.in_process_device("0") == "cuda:0"
        with device_lease("cuda:0", lock_dir=tmp_path, timeout_s=1) as second:
            assert (second.held_device, second.child_device("cuda:0")) == ("gpu5", "cuda:0")
            assert second.child_env() == {"CUDA_VISIBLE_DEVICES": "5"}
            assert second.in_process_device("0") == "cuda:1"  # as this process numbers it


def test_configured_gpus_when_nothing_is_visible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with device_lease("0", lock_dir=tmp_path, gpus=[6, 7], timeout_s=1) as lease:
        assert lease.held_device == "gpu6" and lease.in_process_device("0") == "cuda:6"
        assert (tmp_path / "gpu6.lock").is_file()


def test_cpu_points_share_one_lock_and_keep_their_device(tmp_path: Path) -> None:
    with device_lease("cpu", lock_dir=tmp_path, timeout_s=1) as lease:
        # a CPU point's child sees no GPU at all
        assert (lease.held_device, lease.gpu) == ("cpu", None)
        assert lease.child_env() == {"CUDA_VISIBLE_DEVICES": ""}
        assert lease.child_device("cpu") == lease.in_process_device("cpu") == "cpu"
        assert lease.wait_s < 1 and lease.acquired_at <= time.time()


def test_default_lock_dir_is_under_the_temp_dir() -> None:
    import tempfile

    assert default_lock_dir() == Path(tempfile.gettempdir()) / "libreyolo-gpu-locks"
