"""A tune search's prior: before the first point of a training series under
`tune.memory_budget_mb` on the CPU, the largest batch its step is predicted to fit.

The prediction is `--batch -1`'s (`host_fit`): two tracked probe steps of the series' own
measured step (batches 2 and 4) give the tensors' lines, and the second step's own peak RSS
anchors them at RSS_PER_TENSOR_BYTE per tensor byte of growth. No real step confirms it here:
the search's first point, measured at the predicted batch, does (`analysis.tune`).

`sweep.prior_probe` runs it in a process of its own, so its peak RSS is a fresh process's, as a
sweep point's is.

Must not: write files, or measure anything but the two probe steps.
"""

from __future__ import annotations

import time

import torch

from libreyolo.config.schema import ProfileConfig
from libreyolo.document.tune_model import TunePrior
from libreyolo.errors import NoProfileError
from libreyolo.measure import host_fit
from libreyolo.measure.autobatch import data_limits
from libreyolo.measure.train import HostStepProbe, probe_trainer
from libreyolo.measure.window import plan_window


def predict_prior(settings: ProfileConfig, budget_mb: float) -> TunePrior:
    """The largest batch the probe steps predict under `budget_mb` of peak RSS (0: not one
    image), with its predicted peak; NoProfileError where the lines do not grow."""
    started = time.perf_counter()
    if settings.threads is not None:
        torch.set_num_threads(settings.threads)  # as the point's step runs
    plan = plan_window(settings.window.warmup, settings.window.steps, measured_flag="--steps")
    limits = data_limits(settings.dataset.name_or_path, plan)
    probe = HostStepProbe(*probe_trainer(settings, torch.device("cpu"), limits))
    lines, anchor = host_fit.probe_lines(probe)
    batch = host_fit.largest_under(lines, anchor, budget_mb * host_fit.MB)
    if batch is None:
        raise NoProfileError("the probe steps' memory did not grow with the batch")
    return TunePrior(
        batch=batch,
        predicted_mb=round(anchor.rss_at(lines, max(batch, 1)) / host_fit.MB, 1),
        anchor_mb=round(anchor.rss_bytes / host_fit.MB, 1),
        probe_s=round(time.perf_counter() - started, 1),
    )
