"""Log a profile or a sweep folder to MLflow and/or TensorBoard: the one path `profile log`
and the sweep callbacks share.

Must not: import torch, numpy, Hydra, or a tracking library (the sinks import theirs).
"""

from __future__ import annotations

from libreyolo.analysis.tracked import LoggedRun, LoggedRuns
from libreyolo.errors import UsageError
from libreyolo.tracking.extras import require
from libreyolo.tracking.mlflow_sink import MlflowLogged, log_mlflow
from libreyolo.tracking.source import read_source
from libreyolo.tracking.tensorboard_sink import log_tensorboard

DEFAULT_EXPERIMENT = "libreyolo"


def log_source(
    path: str,
    *,
    mlflow_uri: str | None = None,
    experiment: str | None = None,
    tensorboard_dir: str | None = None,
) -> LoggedRuns:
    """Log the runs of `path` where asked; UsageError when asked nowhere."""
    if mlflow_uri is None and tensorboard_dir is None:
        raise UsageError(
            "log needs --mlflow URI or --tensorboard DIR (or both)",
            hint="e.g. --mlflow file:./mlruns",
        )
    if experiment is not None and mlflow_uri is None:
        raise UsageError("--experiment names an MLflow experiment: it needs --mlflow URI")
    # Both extras before anything is logged: a missing one must not leave half a log.
    if mlflow_uri is not None:
        require("mlflow", "mlflow", "--mlflow")
    if tensorboard_dir is not None:
        require("tensorboard.compat.proto.event_pb2", "tensorboard", "--tensorboard")
    source = read_source(path)
    name = experiment or DEFAULT_EXPERIMENT
    logged: MlflowLogged | None = None
    if mlflow_uri is not None:
        logged = log_mlflow(
            mlflow_uri, name, source.runs, source.sweep_name, source.sweep_artifacts
        )
    folders = {} if tensorboard_dir is None else log_tensorboard(tensorboard_dir, source.runs)
    return LoggedRuns(
        source=path,
        mlflow_uri=mlflow_uri,
        experiment=name if logged else None,
        experiment_id=logged.experiment_id if logged else None,
        parent_run_id=logged.parent_run_id if logged else None,
        tensorboard_dir=tensorboard_dir,
        runs=tuple(
            LoggedRun(
                name=run.name,
                status=run.status,
                reason=run.reason,
                mlflow_run_id=logged.run_ids[run.name] if logged else None,
                tensorboard_dir=folders.get(run.name),
            )
            for run in source.runs
        ),
    )
