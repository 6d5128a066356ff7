"""The `libreyolo-sweep` entry: a thin `@hydra.main` task over the packaged `profile` config.

Role: when a multirun starts, `SweepReportCallback.on_multirun_start` (packaged as
`hydra/callbacks/sweep_report`, run in this process whichever launcher runs the jobs) checks
that the sweep folder holds no file of ours that someone else wrote (else: one line, exit 2) and
writes the grid to `sweep_plan.json`. Each Hydra job hands its resolved config, its overrides and
its output folder (`hydra.sweep.subdir`, e.g. `b4_s640_amp1`) to `run_point`, which takes the
point's device lease and measures (in a fresh child process unless `sweep.isolate=false`), or
keeps the point a previous run into the same folder already measured (`sweep.resume`). After
the multirun, `main` writes `sweep.json` at the sweep root over the planned grid, prints the
table and exits 0 when every point is ok, 1 otherwise (the counts are printed): the status is
mapped and set by `libreyolo.boundary.status`, like every entry point's, Hydra's own exits too.

Stop: SIGINT (Ctrl-C, to the process group or to this process alone) or SIGTERM stops the point
in flight (its child is terminated, the point recorded `interrupted`), starts no other, writes
`sweep.json` and the table for what the folder holds (never-run points `missing`) and exits
128 + the signal (130, 143) with one line on stderr and no traceback.

Must not: parse `sys.argv` itself (Hydra does: another parser before it would swallow
Hydra's flags), raise for an expected point
failure, print or exit but through `libreyolo.boundary`, or keep state in the task beyond the
list of points this process ran (submitit and joblib pickle the task by value with
every global it touches, and a global holding a lock cannot be pickled).
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from libreyolo.boundary.output import Output
from libreyolo.boundary.status import exit_process, exit_status
from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import DeviceConfig, ProfileConfig, SweepConfig, register_schemas
from libreyolo.document.json_value import JsonObject
from libreyolo.document.tune_model import TuneRecord
from libreyolo.errors import ExitStatus, UsageError
from libreyolo.render.sweep_text import HIGHEST, sweep_lines
from libreyolo.render.tune_text import tune_lines
from libreyolo.sweep import tune_run
from libreyolo.sweep.lease import check_lease_timeout, cuda_index, device_label, usable_lock_dir
from libreyolo.sweep.naming import name_swept_keys
from libreyolo.sweep.objective import point_objective, sweeper_value
from libreyolo.sweep.owned import refuse_foreign
from libreyolo.sweep.plan import grid_plan, write_plan
from libreyolo.sweep.plugins import check_direction, check_plugins
from libreyolo.sweep.point import forget_warnings, run_point
from libreyolo.sweep.ray_cluster import quiet_schema_warning
from libreyolo.sweep.refused import Refused
from libreyolo.sweep.report import SweepResult, write_report
from libreyolo.sweep.stop import signal_of, signals_ignored, stop_on_signals
from libreyolo.sweep.tracking_callbacks import forget_queued, run_queued
from libreyolo.sweep.trust import check_sweep_config, split_trust_flags

_RAN: list[tuple[Path, Path, str]] = []  # (sweep root, point dir, status) per job in-process
_ROOTS: list[Path] = []  # sweep roots of the multiruns this (parent) process started
_DATED: list[bool] = []  # per root: its template holds ${now:...}, so a re-run goes elsewhere


class SweepReportCallback(Callback):
    """Checks the sweep folder and writes the grid before the first job, whichever process
    runs the jobs; `main` reports from that folder once they are done."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        root = Path(str(config.hydra.sweep.dir)).resolve()
        try:
            name_swept_keys(config)  # before the plan: it resolves every job's folder
            plan = _plan(config)
            refuse_foreign(root, plan or ())
            _check_settings(config)
            check_direction(OmegaConf.select(config, "hydra.sweeper.direction"))
            _make_root(root)
        except UsageError as err:
            raise Refused(err) from None
        _ROOTS.append(root)
        sweep = OmegaConf.to_container(config.hydra.sweep, resolve=False)
        assert isinstance(sweep, dict)
        _DATED.append("${now:" in str(sweep.get("dir")))
        write_plan(root, plan)


def _check_settings(config: DictConfig) -> None:
    """UsageError for lease settings no point could measure with (a lock folder that cannot be
    written, a timeout that is not a number of seconds, a device name that is no device); a
    value swept per point is checked by its point, which then fails with the reason."""
    defaults = SweepConfig()
    usable_lock_dir(OmegaConf.select(config, "sweep.lock_dir", default=defaults.lock_dir))
    timeout = OmegaConf.select(config, "sweep.lease_timeout_s", default=defaults.lease_timeout_s)
    check_lease_timeout(float(timeout))
    name = str(OmegaConf.select(config, "device.name", default=DeviceConfig.name))
    if cuda_index(name) is None:
        device_label(name)


def _make_root(root: Path) -> None:
    """Create the sweep folder; UsageError when a file is in the way or it cannot be made."""
    if root.exists() and not root.is_dir():
        raise UsageError(f"hydra.sweep.dir {root} is not a folder", hint="choose another path")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(
            f"cannot create hydra.sweep.dir {root}: {err.strerror or err}",
            hint="choose another path",
        ) from None


def _plan(config: DictConfig) -> dict[str, list[str]] | None:
    """The grid (`grid_plan`), or None with a warning when Hydra's internals moved: the sweep
    then runs unplanned. Two jobs sharing a folder stay a UsageError."""
    try:
        return grid_plan(config)
    except UsageError:
        raise
    except Exception as err:
        Output.plain().notice(
            "warning",
            f"no sweep plan ({type(err).__name__}: {err}): points "
            "that never run will not be listed as missing",
        )
        return None


def window_text(config: JsonObject) -> str:
    """A point's window in words: `3 trials of 40 runs` (training: steps)."""
    window = config["window"]
    assert isinstance(window, dict)
    unit = "runs" if config["mode"] == "infer" else "steps"
    count, repeat = window[unit], window["repeat"]
    return f"{repeat} trial{'s' if repeat != 1 else ''} of {count} {unit}"


@hydra.main(version_base="1.3", config_path="pkg://libreyolo.conf", config_name="profile")
def sweep_task(cfg: DictConfig) -> float:
    """One Hydra job: measure this point into its output folder, record its status and return
    its result (its img/s as a float, for any sweeper; `objective.py`)."""
    hydra_cfg = HydraConfig.get()
    point_dir = Path(hydra_cfg.runtime.output_dir).resolve()
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    root = Path(hydra_cfg.sweep.dir).resolve() if multirun else point_dir
    typed = OmegaConf.to_object(cfg)
    assert isinstance(typed, ProfileConfig)
    config = as_plain_dict(typed)
    # A tune search records a batch that does not fit as a bound: a measured fact to keep.
    tuning = hydra_cfg.sweeper.get("_target_") == tune_run.TUNE_SWEEPER
    try:
        record = run_point(
            config, point_dir, overrides=list(hydra_cfg.overrides.task), reuse_bounds=tuning
        )
    except KeyboardInterrupt:  # recorded as interrupted; the report still lists it
        _RAN.append((root, point_dir, "interrupted"))
        raise
    _RAN.append((root, point_dir, record.status))
    shown = "reused" if record.reused else record.status
    detail = f": {record.reason}" if record.status != "ok" else ""
    if tuning:  # a search measures a size on its ranking window, then again on the full one
        detail += f" ({window_text(config)})"
    Output.plain().lines(f"{point_dir.name}: {shown}{detail}")
    return sweeper_value(point_objective(record, point_dir, root, config), hydra_cfg.sweeper)


def main() -> None:
    """Console-script entry: the sweep (`_sweep`) through the one status map, then its exit.
    A crash shows its traceback: Hydra owns the command line, so there is no --debug."""
    out = Output.plain()
    exit_process(exit_status(lambda: _sweep(out), out, crash_traceback=True), out)


def _sweep(out: Output) -> ExitStatus:
    """Check what the config would make Hydra run (`trust.py`), run the Hydra app, then report;
    a refusal is raised (one line, exit 2), a stop is its line and 128 + the signal."""
    register_schemas()
    quiet_schema_warning()
    trust, sys.argv[1:] = split_trust_flags(sys.argv[1:])
    check_plugins(sys.argv[1:])  # before Hydra imports a plug-in that cannot work
    check_sweep_config(sys.argv[1:], trust)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # ray_gpus: no ~/.ray/auth_token
    _RAN.clear()
    _ROOTS.clear()
    _DATED.clear()
    tune_run.forget()
    forget_warnings()
    forget_queued()
    stopped: signal.Signals | None = None
    try:
        with stop_on_signals():
            sweep_task()
    except KeyboardInterrupt as stop:
        stopped = signal_of(stop)
    except Refused as refused:
        raise refused.error from None
    tuned = tune_run.written()
    with signals_ignored():
        report = _report(out, tuned)
    if stopped is not None:
        forget_queued()
        out.error_line("interrupted", _stopped_line(report))
        return ExitStatus(128 + stopped)
    if report is not None:
        run_queued(out)  # hydra/callbacks=mlflow|tensorboard, over the report just written
    if tuned is not None and report is not None:
        # A search: a batch that does not fit is a bound it found, not a failure.
        answered = len(tuned[1].recommended) == len(tuned[1].series)
        return ExitStatus.OK if report.complete_but_bounds and answered else ExitStatus.FAILED
    if report is not None and not report.complete:
        return ExitStatus.FAILED
    return ExitStatus.OK


def _stopped_line(report: SweepResult | None) -> str:
    """`interrupted: 2 of 4 points done; ...` and how to resume: the same command, or with the
    sweep folder pinned when its name is dated (the same command would start a new sweep)."""
    if report is None:
        return "interrupted before the first point: nothing was measured"
    done = f"{report.data['num_ok']} of {report.data['num_points']}"
    again = "run the same command again to resume"
    if _DATED and _DATED[0]:
        pin = shlex.quote(f"hydra.sweep.dir={report.path.parent}")
        again = f"add {pin} to the same command to resume"
    return f"interrupted: {done} points done; {again}"


def _report(out: Output, tuned: tuple[Path, TuneRecord] | None) -> SweepResult | None:
    """Write and print the report of the sweep this process ran (after a tune search, its
    answers first); None when nothing ran (`--help`, `--cfg`, a stop before the
    first job). A folder it must not write into raises its `UsageError`."""
    only = [point for _, point, _ in _RAN] or None
    root = _ROOTS[0] if _ROOTS else _RAN[0][0] if _RAN else None
    if tuned is not None and only is None:  # the jobs ran elsewhere: the search knows them
        only = [tuned[0] / step.point for series in tuned[1].series for step in series.path]
    if root is None:
        return None
    report = write_report(root, only=only, out=out)
    if tuned is None:
        out.lines(report.table)
    else:  # as `summary <sweep dir>` prints it: the answer, then the table
        out.lines("\n".join(tune_lines(tuned[1]) + sweep_lines(report.record, best=HIGHEST)))
    out.lines(f"sweep: {report.path}")
    return report


if __name__ == "__main__":
    main()
