"""Reading an MLflow store back with MLflow's own client."""

from __future__ import annotations

from typing import Any


def runs_by_name(client: Any, experiment: str = "libreyolo") -> dict[str, Any]:
    """Every run of `experiment`, by run name."""
    found = client.get_experiment_by_name(experiment)
    assert found is not None, experiment
    return {run.info.run_name: run for run in client.search_runs([found.experiment_id])}


def artifacts(client: Any, run: Any) -> list[str]:
    return sorted(item.path for item in client.list_artifacts(run.info.run_id))
