"""`ClusterRayLauncher`: the Hydra launcher behind `hydra/launcher=ray` (and `ray_gpus`).

Role: the thin class Hydra's plug-in registry instantiates (libreyolo/conf/hydra/launcher/
ray.yaml names it); `launch` hands the jobs to `libreyolo.sweep.ray_cluster.launch` instead of
hydra-ray-launcher's own, which cannot join a running cluster (see that module).

Must not: import ray, hydra-ray-launcher, torch or libreyolo at module level: Hydra imports every
module of every plug-in when any Hydra app starts, with or without the `ray` extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


class ClusterRayLauncher(Launcher):
    """hydra-ray-launcher's `RayLauncher` settings (`ray.init`, `ray.remote`), our launch."""

    def __init__(self, ray: DictConfig) -> None:
        self.ray_cfg = ray
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None
        self.config: DictConfig | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Any:
        from libreyolo.sweep.ray_cluster import launch

        return launch(
            self.ray_cfg,
            config=self.config,
            hydra_context=self.hydra_context,
            task_function=self.task_function,
            job_overrides=job_overrides,
            initial_job_idx=initial_job_idx,
        )
