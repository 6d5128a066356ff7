"""The one measurement loop: which iterations become which samples, on CPU with a fake step."""

from __future__ import annotations

import time

import pytest
import torch

from libreyolo.measure.energy import EnergyReading
from libreyolo.measure.loop import run_window
from libreyolo.measure.phases import PhaseTimer
from libreyolo.measure.window import (
    TraceRecorder,
    WindowPlan,
    plan_inference_window,
    plan_window,
)

CPU = torch.device("cpu")
PHASES = ("load", "work")


class CountingRecorder(TraceRecorder):
    """No profiler; counts the calls the loop makes."""

    def __init__(self, plan: WindowPlan) -> None:
        super().__init__(plan, "cpu", enabled=False)
        self.num_steps, self.closed_at = 0, -1

    def step(self) -> None:
        self.num_steps += 1

    def close(self) -> None:
        if self.closed_at < 0:
            self.closed_at = self.num_steps


def test_every_iteration_lands_where_the_plan_says() -> None:
    plan = plan_window(2, 5)  # warmup 2, unsynced 2, bare 2, synced 3
    recorder = CountingRecorder(plan)
    seen: list[tuple[int, bool]] = []
    progress: list[tuple[str, int, int]] = []

    def step(iteration: int, timer: PhaseTimer) -> float:
        seen.append((iteration, timer.synced))
        with timer("load"):
            pass
        loaded = time.perf_counter()
        with timer("work"):
            time.sleep(0.001)
        return loaded

    record = run_window(plan, CPU, step, recorder, lambda *a: progress.append(a), phases=PHASES)
    assert [i for i, _ in seen] == list(range(plan.num_total))
    assert [synced for _, synced in seen] == [plan.is_synced(i) for i in range(plan.num_total)]
    assert (recorder.num_steps, recorder.closed_at) == (plan.num_traced, plan.num_traced)
    assert len(record.bare_ms) == plan.num_bare and min(record.bare_ms) >= 1.0
    assert [s.index for s in record.steps] == list(range(plan.num_measured))
    assert [s.synced for s in record.steps] == [False, False, True, True, True]
    unsynced = [s for s in record.steps if not s.synced]
    assert record.unsynced_wall_ms == [s.wall_ms for s in unsynced]
    assert all(s.dataload_ms is not None and s.dataload_ms < s.wall_ms for s in unsynced)
    for sample in record.steps[2:]:
        assert set(sample.phase_ms) == set(PHASES) and sample.dataload_ms is None
        assert sample.wall_ms == round(sum(sample.phase_ms.values()), 4)
    assert {name: len(walls) for name, walls in record.phase_ms.items()} == {"load": 3, "work": 3}
    assert progress[-1] == ("measured step", 7, 7) and progress[0] == ("warmup", 1, 2)


def test_a_step_that_returns_nothing_has_no_dataload_and_missing_phases_count_zero() -> None:
    plan = plan_window(0, 2, traced=False)

    def step(iteration: int, timer: PhaseTimer) -> None:
        with timer("work"):
            pass

    record = run_window(plan, CPU, step, CountingRecorder(plan), None, phases=PHASES)
    assert [s.dataload_ms for s in record.steps] == [None, None]
    assert record.phase_ms["load"] == [0.0]


def test_the_recorder_is_closed_when_a_step_fails() -> None:
    plan = plan_window(1, 4)
    recorder = CountingRecorder(plan)

    def step(iteration: int, timer: PhaseTimer) -> None:
        if iteration == 2:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        run_window(plan, CPU, step, recorder, None, phases=PHASES)
    assert recorder.closed_at == 2


class RecordingMeter:
    """A window meter that logs where in the loop it is started, stopped and closed."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.reading = EnergyReading(
            joules=600.0, window_ms=2000.0, power_limit_w=700.0, sm_clock_mhz=1980, gpu="H200"
        )

    def start(self) -> None:
        self.events.append("start")

    def stop(self) -> tuple[EnergyReading | None, str | None]:
        self.events.append("stop")
        return self.reading, "a meter's note"

    def close(self) -> None:
        self.events.append("close")


@pytest.mark.parametrize(
    "plan", [plan_window(2, 5), plan_inference_window(1, 3, traced=False)], ids=["run", "infer"]
)
def test_the_meter_spans_exactly_the_unsynced_iterations(plan: WindowPlan) -> None:
    events: list[str] = []
    meter = RecordingMeter(events)

    def step(iteration: int, timer: PhaseTimer) -> None:
        events.append(f"{iteration}{'s' if timer.synced else ''}")

    record = run_window(plan, CPU, step, CountingRecorder(plan), None, phases=PHASES, meter=meter)
    inside = events[events.index("start") + 1 : events.index("stop")]
    assert inside == [str(i) for i in range(plan.num_warmup, plan.num_traced)]
    assert events[: plan.num_warmup] == [str(i) for i in range(plan.num_warmup)]
    assert events.count("start") == events.count("stop") == 1 and events[-1] == "close"
    assert record.energy is meter.reading and record.notes[0] == "a meter's note"


def test_the_meter_is_closed_unstopped_when_a_step_fails() -> None:
    plan = plan_window(1, 4)
    events: list[str] = []

    def step(iteration: int, timer: PhaseTimer) -> None:
        if iteration == 1:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        run_window(
            plan,
            CPU,
            step,
            CountingRecorder(plan),
            None,
            phases=PHASES,
            meter=RecordingMeter(events),
        )
    assert events == ["start", "close"]
