"""The host sampler on this machine's real /proc, and where there is none."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from libreyolo.document.model import Host
from libreyolo.measure.host import HostSampler, StepHost, usable_cpus

linux = pytest.mark.skipif(
    not os.path.isfile(f"/proc/{os.getpid()}/task/{os.getpid()}/schedstat"),
    reason="needs Linux /proc schedstat",
)


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@linux
def test_a_busy_step_is_on_cpu_time() -> None:
    sampler = HostSampler(intra_op_threads=lambda: 3)
    sampler.begin()
    _spin(0.05)
    step = sampler.end()
    host = sampler.window()
    assert step.cpu_ms is not None and step.cpu_wait_ms is not None
    assert 30.0 <= step.cpu_ms + step.cpu_wait_ms <= 500.0
    assert step.num_involuntary_switches is not None and step.num_involuntary_switches >= 0
    assert host.measurable and host.cpu_ms == step.cpu_ms and host.cpu_wait_ms == step.cpu_wait_ms
    assert host.usable_cpus == len(os.sched_getaffinity(0)) == usable_cpus()
    assert host.intra_op_threads == 3 and host.num_workers == 0
    assert host.num_threads_sampled is not None and host.num_threads_sampled >= 1
    assert host.load_avg_1m is not None and host.load_avg_1m >= 0
    assert host.runnable_avg is not None and host.runnable_avg >= 1  # this thread, at least


@linux
def test_a_thread_that_exits_mid_window_is_dropped_not_fatal() -> None:
    release = threading.Event()
    worker = threading.Thread(target=lambda: (release.wait(), _spin(0.02)))
    worker.start()
    sampler = HostSampler()
    sampler.begin()  # the thread is open and sampled here
    release.set()
    worker.join()
    _spin(0.01)
    first = sampler.end()
    sampler.begin()
    _spin(0.01)
    second = sampler.end()
    sampler.window()
    assert first.cpu_ms is not None and second.cpu_ms is not None
    assert second.cpu_ms > 0


@pytest.fixture
def spinning_child() -> Iterator[int]:
    """A child process that spins for at most 5 s (a busy DataLoader worker); its pid."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import time\nt=time.time()\nwhile time.time()-t<5: pass"]
    )
    time.sleep(0.2)
    yield child.pid
    child.kill()
    child.wait()


@linux
def test_worker_processes_are_sampled_and_split_out(spinning_child: int) -> None:
    sampler = HostSampler(worker_pids=lambda: [spinning_child])
    sampler.begin()
    time.sleep(0.1)
    sampler.end()
    host = sampler.window()
    assert host.num_workers == 1
    assert host.worker_cpu_ms is not None and host.worker_cpu_ms > 20.0
    assert host.cpu_ms is not None and host.cpu_ms >= host.worker_cpu_ms


def test_without_schedstat_the_sampler_says_not_measurable(tmp_path: Path) -> None:
    sampler = HostSampler(proc=str(tmp_path))
    sampler.begin()
    assert sampler.end() == StepHost()
    assert sampler.window() == Host(measurable=False)


@linux
def test_worker_time_outside_the_sampled_steps_is_not_counted(spinning_child: int) -> None:
    sampler = HostSampler(worker_pids=lambda: [spinning_child])
    sampler.begin()
    first = sampler.end()
    time.sleep(0.3)  # a warmup or calibration iteration: the worker spins, unsampled
    sampler.begin(after_sampled=False)  # re-bases the worker
    second = sampler.end()
    sampler.window()
    assert first.cpu_ms is not None and second.cpu_ms is not None
    assert second.cpu_ms < 100.0  # not the 300 ms the worker spun between the steps
