"""The `hydra/sweeper=tune` search: rounds of points through the configured launcher until
every series has its answer, then `tune.json`.

Role: `search` (what the plug-in's `TuneSweeper.sweep` runs) splits the overrides into series
(`tune_series.split_series`), reads and checks each series' composed config before any job
(`tune_series.check_search`, and `owned.refuse_foreign_tune`: a tune.json or tuned*.yaml it did
not write; a refusal is raised as `Refused`: one line, exit 2, nothing measured), then runs
rounds (after each series' prior, `tune_prior`, where its probe steps can predict the batch
under a memory budget): each unfinished series' next batch (`analysis.tune.decide`) goes into one
`launcher.launch` call, so a parallel launcher measures the series side by side, and each
job's `PointObjective` becomes the series' next `Measured`. When every series is `Done`,
or when the sweep is stopped (the unfinished series then `interrupted`, the points of the
round cut short that had finished read from their folders, and the stop goes on), `tune_write`
writes `tune.json`; `written` tells `libreyolo.sweep.app` what this process wrote.
The decision is deterministic, so a resumed search (its points reused by `run_point`) replays
the same path (a prior is probed again, and its RSS may move it by a batch: the points it
then asks for are reused where they were measured).

Must not: measure (the jobs do), hand a `DictConfig` on, or keep state but the records this
process wrote (`_WRITTEN`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

from hydra.core.config_loader import ConfigLoader
from hydra.core.utils import JobReturn, JobStatus
from hydra.errors import HydraException
from hydra.plugins.launcher import Launcher
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from libreyolo.analysis.tensor_memory import MB, PeakLine, largest_batch
from libreyolo.analysis.tune import Done, Measured, Next, decide
from libreyolo.config.compose import ConfigError, as_plain_dict, describe_error
from libreyolo.config.schema import ProfileConfig
from libreyolo.document.json_value import JsonObject
from libreyolo.document.sweep_io import REQUEST_FILE, STATUS_FILE, inside, read_request, read_status
from libreyolo.document.tune_model import TunePrior, TuneRecord, TuneSettings
from libreyolo.errors import UsageError
from libreyolo.sweep.objective import PointObjective, point_objective
from libreyolo.sweep.owned import refuse_foreign_tune
from libreyolo.sweep.plan import job_folder
from libreyolo.sweep.refused import Refused
from libreyolo.sweep.tune_prior import series_prior, wants_prior
from libreyolo.sweep.tune_series import (
    PERCENTILES,
    Series,
    check_search,
    rank_window,
    series_of,
    split_series,
)
from libreyolo.sweep.tune_write import SeriesResult, tune_record, write_tune

# hydra/sweeper=tune's `_target_` (libreyolo/conf/hydra/sweeper/tune.yaml)
TUNE_SWEEPER = "hydra_plugins.libreyolo_tune_sweeper.tune_sweeper.TuneSweeper"
_WRITTEN: list[tuple[Path, TuneRecord]] = []  # (sweep root, record) per search of this process
# A file system may keep modification times to the second (or two): a status written after a
# round began may read as up to this much older. No other sweep writes there that recently.
MTIME_SLACK_S = 2.0


def written() -> tuple[Path, TuneRecord] | None:
    """The sweep folder and record of the last search this process finished or stopped."""
    return _WRITTEN[-1] if _WRITTEN else None


def forget() -> None:
    """Forget the searches this process ran (a new sweep starts)."""
    _WRITTEN.clear()


def _series(
    config: DictConfig, loader: ConfigLoader, arguments: Sequence[str]
) -> list[tuple[Series, JsonObject]]:
    """Each series with what its composed config says, and that config resolved (as a point
    receives it, but for the batch). ConfigError for one that does not compose."""
    found = []
    for job, swept in split_series(loader, arguments):
        try:
            composed = loader.load_sweep_config(config, list(job))
            resolved = _job_config(composed)
        except (HydraException, OmegaConfBaseException) as err:
            raise ConfigError(describe_error(err, job)) from err
        found.append((series_of(job, swept, composed), resolved))
    return found


def _job_config(composed: DictConfig) -> JsonObject:
    """The job's config without Hydra's own node, as `sweep_task` hands it to a point."""
    job = composed.copy()
    with open_dict(job):
        job.pop("hydra", None)
    typed = OmegaConf.to_object(job)
    assert isinstance(typed, ProfileConfig)
    return as_plain_dict(typed)


def _priors(
    series: Sequence[Series], configs: Sequence[JsonObject], settings: TuneSettings
) -> list[TunePrior | None]:
    """Each series' prior (`tune_prior`), where one can be predicted."""
    budget = settings.memory_budget_mb
    return [
        series_prior(config, float(budget), " ".join(one.swept) or "the search")
        if budget is not None and wants_prior(config)
        else None
        for one, config in zip(series, configs, strict=True)
    ]


def _prepared(
    config: DictConfig, loader: ConfigLoader, arguments: Sequence[str]
) -> tuple[list[Series], list[JsonObject], TuneSettings]:
    """The series, their configs and the search's settings, checked; `Refused` when the search
    cannot run."""
    try:
        composed = _series(config, loader, arguments)
        series = [one for one, _ in composed]
        sweep = OmegaConf.to_container(config.hydra.sweep, resolve=False)
        assert isinstance(sweep, dict)
        settings = check_search(series, str(sweep.get("subdir")))
        refuse_foreign_tune(Path(str(config.hydra.sweep.dir)).resolve())
    except UsageError as err:
        raise Refused(err) from None
    return series, [resolved for _, resolved in composed], settings


def _folder(ret: JobReturn, root: Path) -> str:
    """The job's point folder, relative to the sweep folder."""
    assert ret.hydra_cfg is not None  # run_job sets it before the task runs
    output = Path(str(OmegaConf.select(ret.hydra_cfg, "hydra.runtime.output_dir"))).resolve()
    return output.relative_to(root).as_posix() if output.is_relative_to(root) else output.name


def _from_objective(value: PointObjective, batch: int, settings: TuneSettings) -> Measured:
    latency = None
    if settings.percentile in PERCENTILES:
        latency = getattr(value, f"latency_p{settings.percentile}_ms")
    failed = None if value.fits or value.bound else (value.reason or value.status)
    return Measured(
        point=value.point,
        batch=batch,
        fits=value.fits,
        bound=value.bound,
        trials=value.trials_img_per_s if value.fits else (),
        latency_ms=latency,
        peak_mb=value.peak_vram_mb if value.peak_vram_mb is not None else value.peak_rss_mb,
        failed=failed,
        reused=value.reused,
        contended=value.contended,
        predicted_fit=_predicted_fit(value, settings),
    )


def _predicted_fit(value: PointObjective, settings: TuneSettings) -> int | None:
    """The largest batch the point's predicted peak stays under the budget at (maxfit follows
    it; knee and latency do not grow past it); None without a budget or lines."""
    budget = settings.memory_budget_mb
    if budget is None or not value.memory_lines:
        return None
    lines = tuple(PeakLine("", fixed, per_image) for fixed, per_image in value.memory_lines)
    return largest_batch(lines, float(budget) * MB)


def measured_of(ret: JobReturn, batch: int, settings: TuneSettings, root: Path) -> Measured:
    """What the search reads from one job: its `PointObjective`, or the failure of a job whose
    task raised (it is never re-raised: that series stops `failed`)."""
    if ret.status != JobStatus.COMPLETED:
        error = ret._return_value  # the task's exception (`return_value` would raise it)
        reason = f"{type(error).__name__}: {error}"
        return Measured(point=_folder(ret, root), batch=batch, fits=False, failed=reason)
    value = ret.return_value
    if not isinstance(value, PointObjective):
        reason = f"the job returned {type(value).__name__}, not a point's result"
        return Measured(point=_folder(ret, root), batch=batch, fits=False, failed=reason)
    return _from_objective(value, batch, settings)


def finished_point(
    root: Path, folder: str, batch: int, settings: TuneSettings, since: float
) -> Measured | None:
    """A point of the round a stop cut short that finished before it (its status written since
    `since`, epoch seconds, and not `interrupted`), read from its folder; None otherwise."""
    point_dir = inside(root, folder)
    status_path = None if point_dir is None else point_dir / STATUS_FILE
    record = None if status_path is None else read_status(status_path)
    if point_dir is None or status_path is None or record is None:
        return None
    if record.status == "interrupted" or status_path.stat().st_mtime < since - MTIME_SLACK_S:
        return None  # stopped, or a previous sweep's: this one never started it
    request = read_request(point_dir / REQUEST_FILE)
    config = {} if request is None else request.config
    return _from_objective(point_objective(record, point_dir, root, config), batch, settings)


class SearchState:
    """The state of a search: per series what it measured and how it ended."""

    def __init__(self, series: list[Series], settings: TuneSettings) -> None:
        self.series = series
        self.settings = settings
        self.measured: list[list[Measured]] = [[] for _ in series]
        self.done: list[Done | None] = [None] * len(series)
        self.priors: list[TunePrior | None] = [None] * len(series)
        self.rank_windows = [rank_window(one, settings) for one in series]

    def round(self) -> list[tuple[int, Next]]:
        """(series, step) of the next round: each unfinished series' next batch, whether it is
        measured again (it was, on a busy host or a ranking window) and whether on the ranking
        window."""
        launches: list[tuple[int, Next]] = []
        for index, measured in enumerate(self.measured):
            if self.done[index] is not None:
                continue
            prior = self.priors[index]
            step = decide(
                self.settings,
                measured,
                None if prior is None else prior.batch,
                ranking=bool(self.rank_windows[index]),
            )
            if isinstance(step, Done):
                self.done[index] = step
                continue
            seen = any(m.batch == step.batch for m in measured)
            assert seen == step.again, "decide() repeated a batch it did not ask again"
            launches.append((index, step))
        return launches

    def overrides(self, index: int, step: Next) -> list[str]:
        """The job's overrides: the series', its batch, the ranking window where ranked, and
        no reuse where measured again (the point's earlier numbers were busy, or ranked)."""
        job = [*self.series[index].overrides, f"batch={step.batch}"]
        if step.ranked:
            job += self.rank_windows[index]
        if step.again:
            job.append("sweep.resume=false")
        return job

    def results(self) -> list[SeriesResult]:
        return [
            SeriesResult(
                overrides=series.swept,
                imgsz=series.imgsz,
                amp=series.amp,
                threads=series.threads,
                measured=tuple(measured),
                done=done,
                prior=prior,
                ranks=series.ranks,
            )
            for series, measured, done, prior in zip(
                self.series, self.measured, self.done, self.priors, strict=True
            )
        ]


def _finish(root: Path, search: SearchState) -> None:
    record, texts = tune_record(root, search.series[0].mode, search.settings, search.results())
    write_tune(root, record, texts)
    _WRITTEN.append((root, record))


def search(
    *, config: DictConfig, loader: ConfigLoader, launcher: Launcher, arguments: Sequence[str]
) -> list[Sequence[JobReturn]]:
    """Run the search `arguments` (the sweeper's params, then the command line's overrides)
    describes; return every round's job returns, as Hydra's basic sweeper does."""
    series, configs, settings = _prepared(config, loader, arguments)
    root = Path(str(config.hydra.sweep.dir)).resolve()
    root.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(config, root / "multirun.yaml")  # as every Hydra sweeper leaves it
    state = SearchState(series, settings)
    returns: list[Sequence[JobReturn]] = []
    job_idx = 0
    launches: list[tuple[int, Next]] = []
    folders: list[str] = []
    since = time.time()
    try:
        state.priors = _priors(series, configs, settings)
        while launches := state.round():
            batches = [state.overrides(index, step) for index, step in launches]
            folders = [
                job_folder(loader, config, job, job_idx + n) for n, job in enumerate(batches)
            ]
            since = time.time()
            results = launcher.launch(batches, initial_job_idx=job_idx)
            job_idx += len(batches)
            returns.append(results)
            for (index, step), ret in zip(launches, results, strict=True):
                point = measured_of(ret, step.batch, settings, root)
                state.measured[index].append(dataclasses.replace(point, ranked=step.ranked))
    except KeyboardInterrupt:  # the stop goes on once what was measured is written down
        for (index, step), folder in zip(launches, folders, strict=True):
            finished = finished_point(root, folder, step.batch, settings, since)
            if finished is not None:
                finished = dataclasses.replace(finished, ranked=step.ranked)
                state.measured[index].append(finished)
        _finish(root, state)
        raise
    _finish(root, state)
    return returns
