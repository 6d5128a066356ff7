"""`--threads` inside the collectors: the count holds for the block and is put back, and the one
line that says when a run's threads crowd the CPUs it may use."""

from __future__ import annotations

import pathlib

import pytest
import torch

from libreyolo.errors import UsageError
from libreyolo.measure import threads as threads_module
from libreyolo.measure.threads import (
    MAX_THREADS_PER_CPU,
    check_thread_count,
    crowding_warning,
    intra_op_threads,
)


def test_the_thread_count_holds_inside_and_is_restored_after(two_threads: None) -> None:
    with intra_op_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with pytest.raises(RuntimeError), intra_op_threads(1):
        raise RuntimeError("a failed measurement")
    assert torch.get_num_threads() == 2


def test_no_threads_leaves_torch_alone_and_zero_is_a_usage_error(two_threads: None) -> None:
    with intra_op_threads(None):
        assert torch.get_num_threads() == 2
    with pytest.raises(UsageError, match="--threads must be 1 or more; got 0"), intra_op_threads(0):
        pass
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize(
    ("threads", "workers", "cpus", "on_cpu", "line"),
    [
        (
            2,
            8,
            2,
            True,
            "2 intra-op threads + 8 DataLoader workers want 10 CPUs but this process may use 2: "
            "they will wait for each other (lower --workers or --threads)",
        ),
        (
            4,
            0,
            2,
            True,
            "4 intra-op threads want 4 CPUs but this process may use 2: "
            "they will wait for each other (lower --threads)",
        ),
        (
            1,
            2,
            2,
            True,
            "1 intra-op thread + 2 DataLoader workers want 3 CPUs but this process may use 2: "
            "they will wait for each other (lower --workers or --threads)",
        ),
        (
            16,
            8,
            4,
            False,
            "the main thread + 8 DataLoader workers want 9 CPUs but this process may use 4: "
            "they will wait for each other (lower --workers)",
        ),
        (2, 0, 2, True, None),  # exactly enough
        (1, 1, 2, True, None),
        (64, 0, 1, False, None),  # an accelerator does the math: the pool's threads idle
        (64, 3, 4, False, None),
    ],
)
def test_the_crowding_line(
    threads: int, workers: int, cpus: int, on_cpu: bool, line: str | None
) -> None:
    assert crowding_warning(threads, workers, cpus, on_cpu=on_cpu) == line


def test_more_than_four_threads_a_cpu_is_refused_before_torch_is_touched(
    two_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(threads_module, "usable_cpus", lambda: 2)
    with pytest.raises(UsageError) as info, intra_op_threads(9):
        pass
    assert info.value.message == (
        "--threads 9 exceeds 4 threads for each of the 2 CPUs this process may use"
    )
    assert info.value.hint == "use --threads 8 or fewer"
    assert torch.get_num_threads() == 2
    with intra_op_threads(MAX_THREADS_PER_CPU * 2):  # an oversubscription study: allowed
        assert torch.get_num_threads() == 8
    assert torch.get_num_threads() == 2


def test_the_thread_cap_follows_the_cpus_this_process_may_use() -> None:
    check_thread_count(16, 4)
    with pytest.raises(UsageError, match="--threads 17 exceeds 4 threads for each of the 4 CPUs"):
        check_thread_count(17, 4)


@pytest.mark.parametrize(
    ("files", "cpus"),
    [
        ({"cpu.max": "150000 100000\n"}, 2),  # cgroup v2: 1.5 CPUs a period, rounded up
        ({"cpu.max": "max 100000\n"}, None),  # v2, no limit (v1 files are then not read)
        ({"cpu.max": "20000 100000\n"}, 1),  # a fifth of a CPU still runs one thread
        ({"cpu/cpu.cfs_quota_us": "250000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 3),  # v1
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
        ({"cpu.max": "lots of cpus\n"}, None),  # unreadable: no limit known
        ({}, None),
    ],
)
def test_the_cgroup_cpu_quota(
    files: dict[str, str], cpus: int | None, tmp_path: pathlib.Path
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert threads_module.cpu_quota(tmp_path) == cpus


def test_training_takes_the_threads_1_6_0s_trainer_would(
    two_threads: None, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch's own count lowered to the usable CPUs (affinity, then a cgroup quota), never
    raised, and left alone under OMP_NUM_THREADS."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    notes: list[str] = []
    monkeypatch.setattr(threads_module, "usable_cpus", lambda: 2)
    assert threads_module.training_threads(notes, tmp_path) is None and notes == []
    monkeypatch.setattr(threads_module, "usable_cpus", lambda: 1)
    assert threads_module.training_threads(notes, tmp_path) == 1
    assert notes == [
        "CPU threads lowered from torch's 2 to 1, the CPUs this process may use, as libreyolo "
        "1.6.0's trainer does (--threads N to choose)"
    ]
    monkeypatch.setattr(threads_module, "usable_cpus", lambda: 8)
    (tmp_path / "cpu.max").write_text("100000 100000\n")  # the quota is the tighter limit
    assert threads_module.training_threads([], tmp_path) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert threads_module.training_threads([], tmp_path) is None
    assert torch.get_num_threads() == 2  # it only answers; the measurement sets the count
