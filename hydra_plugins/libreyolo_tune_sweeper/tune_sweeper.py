"""`TuneSweeper`: the Hydra sweeper behind `hydra/sweeper=tune`, a search along `batch`.

Role: the thin class Hydra's plug-in registry instantiates (libreyolo/conf/hydra/sweeper/
tune.yaml names it); `sweep` hands the work to `libreyolo.sweep.tune_run.search`.

Must not: import torch or libreyolo at module level: Hydra imports every module of every
plug-in when any Hydra app starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


class TuneSweeper(Sweeper):
    """Searches each series' batch through the configured launcher (`tune.*` settings)."""

    def __init__(self, params: Mapping[str, str] | None = None) -> None:
        self.params = dict(params or {})
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.launcher: Any = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        from hydra.core.plugins import Plugins

        self.config = config
        self.hydra_context = hydra_context
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: Sequence[str]) -> Any:
        from libreyolo.sweep.tune_run import search

        assert self.config is not None and self.hydra_context is not None
        params = [f"{key}={value}" for key, value in self.params.items()]
        return search(
            config=self.config,
            loader=self.hydra_context.config_loader,
            launcher=self.launcher,
            arguments=[*params, *arguments],
        )
