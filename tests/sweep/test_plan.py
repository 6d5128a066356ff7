"""The sweep's point folders as planned from a grid (no point runs): `threads` names a folder
only when it is set, so every older grid keeps its folder names."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import open_dict

from libreyolo.config.schema import register_schemas
from libreyolo.sweep.plan import Plan, grid_plan


def _plan(tmp_path: Path, *grid: str) -> Plan | None:
    register_schemas()
    with initialize_config_module("libreyolo.conf", version_base="1.3"):
        config = compose("profile", return_hydra_config=True)
        with open_dict(config):  # what `libreyolo-sweep -m <grid>` hands the sweeper
            config.hydra.overrides.task = list(grid)
            config.hydra.sweep.dir = str(tmp_path)
        return grid_plan(config)


@pytest.mark.parametrize(
    ("grid", "plan"),
    [
        (
            ("batch=4", "threads=1,2"),
            {
                "b4_s640_amp1_t1": ["batch=4", "threads=1"],
                "b4_s640_amp1_t2": ["batch=4", "threads=2"],
            },
        ),
        (("batch=4,8",), {"b4_s640_amp1": ["batch=4"], "b8_s640_amp1": ["batch=8"]}),
        (
            ("batch=4", "threads=null,3"),
            {
                "b4_s640_amp1": ["batch=4", "threads=null"],
                "b4_s640_amp1_t3": ["batch=4", "threads=3"],
            },
        ),
    ],
)
def test_threads_names_the_point_folder_only_when_set(
    tmp_path: Path, grid: tuple[str, ...], plan: Plan
) -> None:
    assert _plan(tmp_path, *grid) == plan
