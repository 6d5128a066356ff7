"""The speed-ups a run did not use are timed after the window on the part they change; a pair
that cannot run is a note, never a failed run."""

from __future__ import annotations

import torch

from libreyolo.measure.variant_trials import REPEATS, time_variants
from libreyolo.workload.family import VariantPair

CPU = torch.device("cpu")


class Runner:
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[str] = []
        self.fail = fail

    def variant_pairs(self, batch: object) -> list[VariantPair]:
        assert batch == "batch"
        if self.fail:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore detail")
        return [
            VariantPair("trimmed_targets", "the part", lambda: self.calls.append("as_run"),
                        lambda: self.calls.append("variant")),
        ]  # fmt: skip


def test_both_sides_run_alternated_after_one_untimed_pass_each() -> None:
    runner, notes = Runner(), []
    trials = time_variants(runner, lambda: "batch", CPU, notes)
    assert runner.calls == ["as_run", "variant"] * (REPEATS + 1)
    assert len(trials) == 1 and notes == []
    trial = trials[0]
    assert (trial.variant, trial.part, trial.repeats) == ("trimmed_targets", "the part", REPEATS)
    assert trial.as_run_ms >= 0 and trial.variant_ms >= 0


def test_pairs_sharing_their_part_as_run_time_it_once_per_round() -> None:
    calls: list[str] = []

    def loss_as_run() -> None:  # one callable in two pairs, as a runner shares it
        calls.append("loss")

    def layout_as_run() -> None:
        calls.append("nchw")

    class Shared:
        def variant_pairs(self, batch: object) -> list[VariantPair]:
            return [
                VariantPair("trimmed_targets", "the loss", loss_as_run,
                            lambda: calls.append("trimmed")),
                VariantPair("channels_last", "the passes", layout_as_run,
                            lambda: calls.append("nhwc")),
                VariantPair("vectorised_assigner", "the loss", loss_as_run,
                            lambda: calls.append("vectorised")),
            ]  # fmt: skip

    trials = time_variants(Shared(), lambda: "batch", CPU, [])
    loss_round, layout_round = ["loss", "trimmed", "vectorised"], ["nchw", "nhwc"]
    assert calls == loss_round * (REPEATS + 1) + layout_round * (REPEATS + 1)
    variants = [t.variant for t in trials]
    assert variants == ["trimmed_targets", "vectorised_assigner", "channels_last"]
    assert trials[0].as_run_ms == trials[1].as_run_ms  # one median of the shared part


def test_a_runner_without_pairs_draws_no_batch() -> None:
    def no_batch() -> object:
        raise AssertionError("a batch was drawn for a runner with no variant pairs")

    assert time_variants(object(), no_batch, CPU, []) == []


def test_a_pair_that_cannot_run_is_a_note() -> None:
    notes: list[str] = []
    assert time_variants(Runner(fail=True), lambda: "batch", CPU, notes) == []
    assert notes == [
        "variant trials: could not time the speed-ups after the window (CUDA out of memory. "
        "Tried to allocate 2.00 GiB)"
    ]
