"""The sweep's opt-in tracking callbacks, `hydra/callbacks=mlflow` and `=tensorboard`.

Role: when the multirun ends, in the process that started it (Hydra calls `on_multirun_end`
there whichever launcher ran the jobs; `on_job_end` runs where the job ran: a joblib or Ray
worker, a Slurm node, which may not even see the tracking store), each callback queues its log
of the sweep folder; `app.main` runs the queue once it has written the report (`sweep.json`,
`sweep.html`, whose one writer it is), through `tracking.log_source`, the path `libreyolo profile
log <sweep dir>` takes: every point read from its own folder. A sweep stopped by a signal logs
nothing (`profile log` logs it afterwards). Both packaged files include `sweep_report`, so
picking one keeps the sweep's own callback; the trust check (`trust.py`) accepts these two
targets only at these two keys.

Must not: fail the sweep (a refusal or an MLflow error is one warning line; the MLflow sink
ends the runs it started FAILED and gives up on a server it cannot reach within 15 s), log
from a job, or write the report.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from libreyolo.analysis.tracked import LoggedRuns
from libreyolo.boundary.output import Output
from libreyolo.errors import ProfileError, UsageError
from libreyolo.tracking.log import DEFAULT_EXPERIMENT, log_source

MLFLOW_DIR = "mlruns"  # the default store, inside the sweep folder
TENSORBOARD_DIR = "tensorboard"
_QUEUED: list[Callable[[Output], None]] = []  # logs to run once the report is written


class MlflowCallback(Callback):
    """Logs the sweep as a parent MLflow run and each point as a nested run."""

    def __init__(self, tracking_uri: str | None = None, experiment: str | None = None) -> None:
        self.tracking_uri = tracking_uri
        self.experiment = experiment or DEFAULT_EXPERIMENT

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        root = _root(config)
        uri = (
            self.tracking_uri
            or os.environ.get("MLFLOW_TRACKING_URI")
            or f"file:{root / MLFLOW_DIR}"
        )
        experiment = self.experiment
        _queue("mlflow", lambda: log_source(str(root), mlflow_uri=uri, experiment=experiment))


class TensorboardCallback(Callback):
    """Writes each point's figures as TensorBoard scalars, one run folder per point."""

    def __init__(self, log_dir: str | None = None) -> None:
        self.log_dir = log_dir

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        root = _root(config)
        log_dir = self.log_dir or str(root / TENSORBOARD_DIR)
        _queue("tensorboard", lambda: log_source(str(root), tensorboard_dir=log_dir))


def _root(config: DictConfig) -> Path:
    return Path(str(config.hydra.sweep.dir)).resolve()


def _queue(sink: str, log: Callable[[], LoggedRuns]) -> None:
    _QUEUED.append(lambda out: _log(out, sink, log))


def forget_queued() -> None:
    """Drop the queued logs (a new sweep in this process, or one stopped by a signal)."""
    _QUEUED.clear()


def run_queued(out: Output) -> None:
    """Run the logs the callbacks queued, in order, once the report is written."""
    queued = list(_QUEUED)
    _QUEUED.clear()
    for log in queued:
        log(out)


def _log(out: Output, sink: str, log: Callable[[], LoggedRuns]) -> None:
    """Log; any refusal or failure is one warning line."""
    try:
        logged = log()
    except ProfileError as err:
        # A refusal comes before anything is logged; a later failure says what it left.
        done = "nothing logged: " if isinstance(err, UsageError) else ""
        hint = f" ({err.hint})" if err.hint else ""
        out.notice("warning", f"{sink}: {done}{err.message}{hint}")
        return
    where = logged.mlflow_uri if sink == "mlflow" else logged.tensorboard_dir
    extra = f" (experiment {logged.experiment})" if sink == "mlflow" else ""
    out.say(f"{sink}: {len(logged.runs)} points logged to {where}{extra}")
