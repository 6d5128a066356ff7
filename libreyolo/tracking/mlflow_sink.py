"""Log runs to MLflow: one run per point, nested under the sweep's parent run.

Role: through `MlflowClient` (no fluent `mlflow.start_run`: no active-run state is left in a
long-lived sweep process), each run gets its params, metrics (step 0), tags (`status`, and
`reason` for a point without a profile), artifacts, and ends FINISHED (ok) or FAILED; a sweep
first gets a parent run holding its own files, each point's run tagged `mlflow.parentRunId`
(MLflow's nesting). MLflow 3 refuses its file store unless `MLFLOW_ALLOW_FILE_STORE` is set:
a `file:` URI (or a bare path) is the user's choice of that store, so it is set for them.

Must not: import MLflow at module level, or log anything before the URI and the experiment
are known to work.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from libreyolo.analysis.tracked import TrackedRun
from libreyolo.errors import ProfileError, UsageError
from libreyolo.tracking.extras import require

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

PARENT_TAG = "mlflow.parentRunId"  # what MLflow's UI nests a run under
RUN_NAME_TAG = "mlflow.runName"
MAX_PARAM_CHARS = 6000  # MLflow 3's limit on a param value


@dataclass(frozen=True, slots=True)
class MlflowLogged:
    experiment_id: str
    parent_run_id: str | None
    run_ids: dict[str, str]  # point name -> run id


def log_mlflow(
    uri: str,
    experiment: str,
    runs: Sequence[TrackedRun],
    sweep_name: str | None,
    sweep_artifacts: Sequence[str],
) -> MlflowLogged:
    """Log `runs` (under a parent run named `sweep_name` when it is a sweep) into
    `experiment` at `uri`; UsageError when MLflow refuses the URI or the experiment."""
    require("mlflow", "mlflow", "--mlflow")
    if "://" not in uri or uri.startswith("file:"):
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    try:
        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(experiment)
        experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    except (MlflowException, OSError, ValueError) as err:
        raise UsageError(f"cannot use MLflow at {uri}: {_first_line(err)}") from None
    try:
        parent = None
        if sweep_name is not None:
            parent = _start(client, experiment_id, sweep_name, {"kind": "sweep"})
            for path in sweep_artifacts:
                client.log_artifact(parent, path)
        ids = {run.name: _log_run(client, experiment_id, run, parent) for run in runs}
        if parent is not None:
            ok = all(run.status == "ok" for run in runs)
            client.set_terminated(parent, "FINISHED" if ok else "FAILED")
    except (MlflowException, OSError) as err:
        raise ProfileError(f"MLflow at {uri} failed: {_first_line(err)}") from None
    return MlflowLogged(experiment_id, parent, ids)


def _start(client: MlflowClient, experiment_id: str, name: str, tags: dict[str, str]) -> str:
    run = client.create_run(experiment_id, tags={RUN_NAME_TAG: name, **tags})
    return str(run.info.run_id)


def _log_run(client: MlflowClient, experiment_id: str, run: TrackedRun, parent: str | None) -> str:
    from mlflow.entities import Metric, Param

    tags = {"status": run.status, **({"reason": run.reason} if run.reason else {})}
    if parent is not None:
        tags[PARENT_TAG] = parent
    run_id = _start(client, experiment_id, run.name, tags)
    now_ms = int(time.time() * 1000)
    client.log_batch(
        run_id,
        metrics=[Metric(k, v, now_ms, 0) for k, v in run.metrics.items()],
        params=[Param(k, v[:MAX_PARAM_CHARS]) for k, v in run.params.items()],
    )
    for path in run.artifacts:
        client.log_artifact(run_id, path)
    client.set_terminated(run_id, "FINISHED" if run.status == "ok" else "FAILED")
    return run_id


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
