"""The `libreyolo-sweep` entry: a thin `@hydra.main` task over the packaged `profile` config.

Role: each Hydra job hands its resolved config, its overrides and its output folder
(`hydra.sweep.subdir`, e.g. `b4_s640_amp1`) to `run_point`, which takes the point's device
lease and measures (in a fresh child process unless `sweep.isolate=false`). After a multirun,
`main` writes `sweep.json` at the sweep root, prints the table and exits 0 when every point is
ok, 1 when any failed (the count is printed). With the basic launcher the points ran in this
process and the report covers exactly those; under ray or submitit they ran elsewhere, so
`SweepReportCallback.on_multirun_end` (packaged as `hydra/callbacks/sweep_report`) hands the
sweep root back here and the report scans its point folders.

Must not: parse `sys.argv` itself (Hydra does, hydra-notes §4.4), raise for an expected point
failure, or keep state in the task beyond the list of points this process ran (launchers
pickle the task with the globals it touches, hydra-notes §9.6).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import ProfileConfig, register_schemas
from libreyolo.sweep.point import run_point
from libreyolo.sweep.report import write_report

_RAN: list[tuple[Path, Path, str]] = []  # (sweep root, point dir, status) per job in-process
_ROOTS: list[Path] = []  # sweep roots reported by SweepReportCallback in this (parent) process


class SweepReportCallback(Callback):
    """Hands the sweep root to `main` once every job has run, whichever process ran them."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        _ROOTS.append(Path(str(config.hydra.sweep.dir)).resolve())


@hydra.main(version_base="1.3", config_path="pkg://libreyolo.conf", config_name="profile")
def sweep_task(cfg: DictConfig) -> None:
    """One Hydra job: measure this point into its output folder and record its status."""
    hydra_cfg = HydraConfig.get()
    point_dir = Path(hydra_cfg.runtime.output_dir).resolve()
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    root = Path(hydra_cfg.sweep.dir).resolve() if multirun else point_dir
    typed = OmegaConf.to_object(cfg)
    assert isinstance(typed, ProfileConfig)
    record = run_point(
        as_plain_dict(typed),
        point_dir,
        overrides=list(hydra_cfg.overrides.task),
    )
    _RAN.append((root, point_dir, record["status"]))
    detail = "" if record["status"] == "ok" else f": {record['reason']}"
    print(f"{point_dir.name}: {record['status']}{detail}", flush=True)


def main() -> None:
    """Console-script entry: run the Hydra app, then report and set the exit status."""
    register_schemas()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # ray_gpus: no ~/.ray/auth_token
    _RAN.clear()
    _ROOTS.clear()
    sweep_task()
    if _RAN:  # the basic launcher: exactly the points this process ran
        root, only = _RAN[0][0], [point for _, point, _ in _RAN]
    elif _ROOTS:  # ray, submitit: the jobs ran elsewhere; scan the sweep folder
        root, only = _ROOTS[0], None
    else:  # --help, --cfg
        return
    report = write_report(root, only=only)
    print(report.table)
    print(f"sweep: {report.path}")
    sys.exit(1 if report.num_failed else 0)


if __name__ == "__main__":
    main()
