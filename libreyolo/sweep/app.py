"""The `libreyolo-sweep` entry: a thin `@hydra.main` task over the packaged `profile` config.

Role: each Hydra job hands its resolved config, its overrides and its output folder
(`hydra.sweep.subdir`, e.g. `b4_s640_amp1`) to `run_point`. After a multirun, `main` writes
`sweep.json` at the sweep root, prints the table and exits 0 when every point is ok, 1 when any
failed (the count is printed). Points are measured in a fresh child process unless the
environment sets `LIBREYOLO_SWEEP_ISOLATE=0` (in-process: quick CPU sweeps).

Must not: parse `sys.argv` itself (Hydra does, hydra-notes §4.4), raise for an expected point
failure, or keep state in the task beyond the list of points this process ran.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import ProfileConfig, register_schemas
from libreyolo.sweep.point import run_point
from libreyolo.sweep.report import write_report

ISOLATE_ENV = "LIBREYOLO_SWEEP_ISOLATE"
_RAN: list[tuple[Path, Path, str]] = []  # (sweep root, point dir, status) per job in-process


def isolate_from_env() -> bool:
    """Child process per point unless `LIBREYOLO_SWEEP_ISOLATE` is 0/false/no/off."""
    return os.environ.get(ISOLATE_ENV, "1").strip().lower() not in {"0", "false", "no", "off"}


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
        isolate=isolate_from_env(),
        overrides=list(hydra_cfg.overrides.task),
    )
    _RAN.append((root, point_dir, record["status"]))
    detail = "" if record["status"] == "ok" else f": {record['reason']}"
    print(f"{point_dir.name}: {record['status']}{detail}", flush=True)


def main() -> None:
    """Console-script entry: run the Hydra app, then report and set the exit status."""
    register_schemas()
    _RAN.clear()
    sweep_task()
    if not _RAN:  # --help, --cfg, or a launcher that ran the jobs elsewhere
        return
    root = _RAN[0][0]
    report = write_report(root, only=[point for _, point, _ in _RAN])
    print(report.table)
    print(f"sweep: {report.path}")
    sys.exit(1 if report.num_failed else 0)


if __name__ == "__main__":
    main()
