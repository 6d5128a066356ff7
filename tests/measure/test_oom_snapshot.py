"""An OOM in the warmup explained: the allocator's history recorded over the warmup only, the
snapshot taken while the failed step's tensors are alive and written atomically, and the
failure line naming the sites holding the most. torch.cuda.memory's recording functions are
faked (no GPU here); the snapshot is the fixture's shape (tests/fixtures/oom)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest
import torch

from libreyolo.errors import OutOfMemoryError
from libreyolo.measure import oom_snapshot
from libreyolo.measure.loop import run_window
from libreyolo.measure.oom_snapshot import AllocationHistory, snapshot_path
from libreyolo.measure.phases import PhaseTimer
from libreyolo.measure.window import plan_window
from tests.measure.test_loop import CPU, PHASES, CountingRecorder

FIXTURE = Path(__file__).parents[1] / "fixtures" / "oom" / "oom_snapshot.pickle"
LINE = (
    "out of memory in the warmup: a 629.1 MB request failed with 944.8 MB allocated of "
    "1.08 GB reserved; held most by forward (blocks.py:88) 629.1 MB, assign (loss.py:212) "
    "210.8 MB, (no stack: allocated before the history was recorded) 104.9 MB"
)


class FakeCudaMemory:
    """torch.cuda.memory's history switch and snapshot, logged."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.snapshot = pickle.loads(FIXTURE.read_bytes())  # our own fixture: trusted

    def record(self, enabled: str | None = "all", **kwargs: Any) -> None:
        self.events.append("start" if enabled is not None else "stop")
        if enabled is not None:
            assert kwargs == {"max_entries": 100_000, "stacks": "python", "context": "alloc"}

    def take(self) -> dict[str, Any]:
        self.events.append("snapshot")
        return self.snapshot


@pytest.fixture
def cuda_memory(monkeypatch: pytest.MonkeyPatch) -> FakeCudaMemory:
    fake = FakeCudaMemory()
    monkeypatch.setattr(torch.cuda.memory, "_record_memory_history", fake.record)
    monkeypatch.setattr(torch.cuda.memory, "_snapshot", fake.take)
    return fake


def _cuda_history(path: Path) -> AllocationHistory:
    return AllocationHistory(torch.device("cuda", 0), path)


def test_an_oom_in_the_warmup_writes_the_snapshot_and_names_the_sites(
    cuda_memory: FakeCudaMemory, tmp_path: Path
) -> None:
    path = snapshot_path(str(tmp_path), "run")
    assert path == tmp_path / "run.oom_snapshot.pickle"
    plan = plan_window(3, 4)

    def step(iteration: int, timer: PhaseTimer) -> None:
        if iteration == 1:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 600.00 MiB")

    with pytest.raises(OutOfMemoryError) as info:
        run_window(plan, CPU, step, CountingRecorder(plan), None, phases=PHASES,
                   history=_cuda_history(path))  # fmt: skip
    assert info.value.message == (
        f"{LINE}; snapshot: {path} (libreyolo profile memory, or pytorch.org/memory_viz)"
    )
    assert info.value.hint == "lower --batch or --imgsz"
    assert isinstance(info.value.__cause__, torch.OutOfMemoryError)
    assert cuda_memory.events == ["start", "snapshot", "stop"]
    assert pickle.loads(path.read_bytes()) == cuda_memory.snapshot
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left


def test_the_history_stops_as_the_window_starts(
    cuda_memory: FakeCudaMemory, tmp_path: Path
) -> None:
    """The measured steps pay no stacks; an OOM among them is the plain error, no snapshot."""
    plan = plan_window(2, 4)
    seen: list[tuple[int, list[str]]] = []

    def step(iteration: int, timer: PhaseTimer) -> None:
        seen.append((iteration, list(cuda_memory.events)))
        if iteration == plan.num_warmup + 1:
            raise torch.OutOfMemoryError("CUDA out of memory")

    path = tmp_path / "run.oom_snapshot.pickle"
    with pytest.raises(torch.OutOfMemoryError):
        run_window(plan, CPU, step, CountingRecorder(plan), None, phases=PHASES,
                   history=_cuda_history(path))  # fmt: skip
    assert seen[0] == (0, ["start"]) and seen[plan.num_warmup] == (2, ["start", "stop"])
    assert cuda_memory.events == ["start", "stop"] and not path.exists()


def test_other_failures_and_the_cpu_are_left_as_they_were(
    cuda_memory: FakeCudaMemory, tmp_path: Path
) -> None:
    plan = plan_window(2, 4)

    def boom(iteration: int, timer: PhaseTimer) -> None:
        raise ValueError("a bug")

    path = tmp_path / "run.oom_snapshot.pickle"
    with pytest.raises(ValueError, match="a bug"):
        run_window(plan, CPU, boom, CountingRecorder(plan), None, phases=PHASES,
                   history=_cuda_history(path))  # fmt: skip
    assert cuda_memory.events == ["start", "stop"]
    cpu = AllocationHistory(CPU, path)
    cpu.start()
    assert not cpu.recording
    assert cpu.explained(torch.OutOfMemoryError("out of memory")) is None
    assert cuda_memory.events == ["start", "stop"] and not path.exists()


def test_a_snapshot_that_cannot_be_written_still_explains_the_oom(
    cuda_memory: FakeCudaMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(target: Path, payload: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(oom_snapshot, "write_atomic", full)
    history = _cuda_history(tmp_path / "run.oom_snapshot.pickle")
    history.start()
    error = history.explained(torch.OutOfMemoryError("CUDA out of memory"))
    assert error is not None
    assert error.message == f"{LINE}; no snapshot (No space left on device)"
    assert not history.recording
