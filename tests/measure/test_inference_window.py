"""`infer --runs N`: N latency samples (all traced), then a few synced runs for the stage split
(the seed's default 100 end to end: tests/measure/test_default_window.py)."""

from __future__ import annotations

import pytest

from libreyolo.errors import UsageError
from libreyolo.measure.window import MAX_STAGE_SPLIT, plan_inference_window


@pytest.mark.parametrize(
    ("runs", "synced", "bare"),
    [(100, MAX_STAGE_SPLIT, 20), (20, 10, 10), (3, 1, 1), (1, 1, 1)],
)
def test_every_run_is_a_latency_sample(runs: int, synced: int, bare: int) -> None:
    plan = plan_inference_window(5, runs)
    assert (plan.num_unsynced, plan.num_synced, plan.num_bare) == (runs, synced, bare)
    assert plan.num_traced == 5 + runs  # the trace holds every latency sample
    window = plan.document()
    assert (window.num_unsynced, window.num_synced, window.num_measured) == (
        runs,
        synced,
        runs + synced,
    )


def test_runs_and_warmup_must_be_counts() -> None:
    with pytest.raises(UsageError, match="--runs must be 1 or more; got 0"):
        plan_inference_window(0, 0)
    with pytest.raises(UsageError, match="--warmup must be 0 or more; got -1"):
        plan_inference_window(-1, 5)
