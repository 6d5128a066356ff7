"""GradScaler's skipped updates are recorded per step without a sync inside the step, and a
profile counts those of its measured steps and says what they mean."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from libreyolo.measure.train import skipped_updates_note
from libreyolo.measure.window import plan_window
from libreyolo.workload.hooks import no_phases
from libreyolo.workload.train import (
    ModelEMA,
    UpdateRecord,
    backward_and_update,
    skipped_updates,
)


@dataclass
class _Step:
    """The least `backward_and_update` needs, with an enabled scaler (CPU GradScaler works)."""

    model: nn.Linear
    scaler: torch.amp.GradScaler
    optimizer: torch.optim.Optimizer
    ema: ModelEMA | None = None
    updates: UpdateRecord = field(default_factory=UpdateRecord)


def _step(enabled: bool, fused: bool = False) -> _Step:
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=0.1, fused=True if fused else None, foreach=None if fused else True
    )
    return _Step(model, torch.amp.GradScaler("cpu", enabled=enabled), optimizer)


def _loss(step: _Step, blow_up: bool) -> torch.Tensor:
    out = step.model(torch.ones(2, 4)).sum()
    return out * float("inf") if blow_up else out


def test_the_steps_with_inf_gradients_are_the_skipped_ones() -> None:
    step = _step(enabled=True)
    before = step.model.weight.detach().clone()
    for blow_up in (False, True, False, True, True):
        backward_and_update(_loss(step, blow_up), step, no_phases)
    assert step.updates.skipped() == [1, 3, 4]
    assert not torch.equal(step.model.weight, before)  # the finite steps did update


def test_a_fused_optimizer_skips_on_the_device_and_is_still_seen() -> None:
    step = _step(enabled=True, fused=True)
    for blow_up in (True, False):
        backward_and_update(_loss(step, blow_up), step, no_phases)
    assert step.updates.skipped() == [0]


def test_a_disabled_scaler_skips_nothing() -> None:
    step = _step(enabled=False)
    backward_and_update(_loss(step, False), step, no_phases)
    assert step.updates.skipped() == []


def test_only_measured_steps_count() -> None:
    plan = plan_window(3, 4)  # warmup 0-2, then 2 unsynced, calibration, 2 synced
    skipped = [0, 1, 3, plan.num_total - 1]
    measured = plan.measured_indices(skipped)
    assert measured == [0, plan.num_measured - 1]
    assert plan.measured_indices([*range(plan.num_warmup), 10_000]) == []


def test_the_note_counts_and_explains() -> None:
    note = skipped_updates_note(2, 20)
    assert note.startswith("AMP: GradScaler skipped the optimizer update of 2 of the 20 measured")
    assert "--warmup" in note


def test_a_runner_without_an_update_record_skips_nothing() -> None:
    step = _step(enabled=True)
    backward_and_update(_loss(step, True), step, no_phases)
    assert skipped_updates(step) == [0]
    assert skipped_updates(object()) == []  # a third-party runner that keeps no record
