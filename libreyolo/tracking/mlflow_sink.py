"""Log runs to MLflow: one run per point, nested under the sweep's parent run.

Role: through `MlflowClient` (no fluent `mlflow.start_run`: no active-run state is left in a
long-lived sweep process), each run gets its params, metrics (step 0), tags (`status`, and
`reason` for a point without a profile), artifacts, and ends FINISHED (ok) or FAILED; a sweep
first gets a parent run holding its own files, each point's run tagged `mlflow.parentRunId`
(MLflow's nesting). Whatever stops an export once a run is started (MLflow refusing a param,
a lost server, Ctrl-C) ends every run it left open FAILED, never RUNNING; HTTP requests are
bounded while it runs (`mlflow_http.py`). MLflow 3 refuses its file store unless
`MLFLOW_ALLOW_FILE_STORE` is set: a `file:` URI (or a bare path) is the user's choice of that
store, so it is set for them.

Must not: import MLflow at module level, or log anything before the URI and the experiment
are known to work.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from libreyolo.analysis.tracked import TrackedRun
from libreyolo.errors import ProfileError, UsageError
from libreyolo.tracking.extras import require
from libreyolo.tracking.mlflow_http import REACH_HINT, bounded_http, unreachable

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
    `experiment` at `uri`; UsageError when MLflow refuses the URI or the experiment or the
    server cannot be reached, ProfileError when logging fails once a run is started."""
    require("mlflow", "mlflow", "--mlflow")
    if "://" not in uri or uri.startswith("file:"):
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    with bounded_http():
        client, experiment_id = _contact(uri, experiment)
        opened = _Opened(client)
        try:
            return _log_all(opened, experiment_id, runs, sweep_name, sweep_artifacts)
        except BaseException as err:
            # Whatever stopped the export (a refused param, a lost server, Ctrl-C), no run it
            # started is left RUNNING.
            left = opened.fail_all()
            if not isinstance(err, Exception):
                raise
            raise _failure(uri, opened.at, err, left) from None


def _contact(uri: str, experiment: str) -> tuple[MlflowClient, str]:
    """The client at `uri` and the id of `experiment` (made when missing): the first request,
    so an unreachable server is known before any run is started."""
    from mlflow.tracking import MlflowClient

    try:
        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(experiment)
        experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    except Exception as err:  # a tracking-store plug-in may raise anything
        why = unreachable(err)
        if why is not None:
            raise UsageError(f"cannot reach MLflow at {uri}: {why}", hint=REACH_HINT) from None
        raise UsageError(f"cannot use MLflow at {uri}: {_first_line(err)}") from None
    return client, str(experiment_id)


def _failure(uri: str, at: str, err: Exception, left: str | None) -> ProfileError:
    """The one line for an export that failed once runs were started."""
    lost = unreachable(err)
    ended = "its open runs ended FAILED" if left is None else f"its open runs not ended: {left}"
    return ProfileError(
        f"MLflow at {uri} failed on run '{at}': {lost or _first_line(err)}; {ended}",
        hint=REACH_HINT if lost else None,
    )


@dataclass(slots=True)
class _Opened:
    """The runs this export started and has not ended (id -> name, newest last), and the
    name of the run it is on."""

    client: MlflowClient
    names: dict[str, str] = field(default_factory=dict)
    at: str = ""

    def start(self, experiment_id: str, name: str, tags: dict[str, str]) -> str:
        self.at = name
        run = self.client.create_run(experiment_id, tags={RUN_NAME_TAG: name, **tags})
        run_id = str(run.info.run_id)
        self.names[run_id] = name
        return run_id

    def end(self, run_id: str, ok: bool) -> None:
        self.at = self.names[run_id]
        self.client.set_terminated(run_id, "FINISHED" if ok else "FAILED")
        del self.names[run_id]

    def fail_all(self) -> str | None:
        """End every open run FAILED, newest first; why one could not be ended (the rest
        then stay open: a server that failed that request is not asked again), else None."""
        for run_id in reversed(list(self.names)):
            try:
                self.client.set_terminated(run_id, "FAILED")
            except Exception as err:
                return unreachable(err) or _first_line(err)
            del self.names[run_id]
        return None


def _log_all(
    opened: _Opened,
    experiment_id: str,
    runs: Sequence[TrackedRun],
    sweep_name: str | None,
    sweep_artifacts: Sequence[str],
) -> MlflowLogged:
    parent = None
    if sweep_name is not None:
        parent = opened.start(experiment_id, sweep_name, {"kind": "sweep"})
        for path in sweep_artifacts:
            opened.client.log_artifact(parent, path)
    ids = {run.name: _log_run(opened, experiment_id, run, parent) for run in runs}
    if parent is not None:
        opened.end(parent, all(run.status == "ok" for run in runs))
    return MlflowLogged(experiment_id, parent, ids)


def _log_run(opened: _Opened, experiment_id: str, run: TrackedRun, parent: str | None) -> str:
    from mlflow.entities import Metric, Param

    tags = {"status": run.status, **({"reason": run.reason} if run.reason else {})}
    if parent is not None:
        tags[PARENT_TAG] = parent
    run_id = opened.start(experiment_id, run.name, tags)
    now_ms = int(time.time() * 1000)
    opened.client.log_batch(
        run_id,
        metrics=[Metric(k, v, now_ms, 0) for k, v in run.metrics.items()],
        params=[Param(k, v[:MAX_PARAM_CHARS]) for k, v in run.params.items()],
    )
    for path in run.artifacts:
        opened.client.log_artifact(run_id, path)
    opened.end(run_id, run.status == "ok")
    return run_id


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
