"""The series a `hydra/sweeper=tune` search runs, and the settings it runs them with.

Role: `split_series` crosses the sweeper's `params` and the command line's overrides as Hydra's
basic sweeper does (its own parser and split) into the series, one per value of every other
swept axis; the tune sweeper then chooses `batch` within each. `series_of` reads a series'
composed config; `check_search` refuses, before any job, a search that cannot be run as asked
(UsageError, one line): a batch given, a `tune.*` key swept, settings out of range, a goal
without what it needs (trials for a significance test, an inference latency bound), series that
disagree on the mode or the settings, or point folders that do not name the batch. On several
CPU ranks (`device.nproc`) the search is maxfit's over the global batch, which splits evenly
over the ranks as `libreyolo train` splits it: its batch range and step must be multiples of
the ranks, and a window measures one trial.

Must not: run a job, write anything, or hand a `DictConfig` on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from hydra.core.config_loader import ConfigLoader
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf

from libreyolo.config.schema import ModeOption, TuneConfig, requested_ranks
from libreyolo.document.sweep_model import MAX_BATCH, MAX_METRIC
from libreyolo.document.tune_model import TuneSettings
from libreyolo.errors import UsageError
from libreyolo.measure.window import MIN_MEASURED
from libreyolo.sweep.naming import SUBDIR_HINT, names_key

MIN_TRIALS = 3  # knee and latency test a gain on the trials' img/s: two give one degree of freedom
PERCENTILES = (50, 90, 99)  # the profile's latency_p50_ms, latency_p90_ms, latency_p99_ms
NEEDS_TRIALS = ("knee", "latency")
MAX_PATIENCE = 64  # as tune.json's rule: far beyond the 20 doublings to MAX_BATCH
RANK_TRIALS = 2  # a ranking window's trials: the fewest Welch's test takes


@dataclass(frozen=True, slots=True)
class Series:
    """One series: its overrides and what its composed config says."""

    overrides: tuple[str, ...]  # every override of its jobs but the batch
    swept: tuple[str, ...]  # those of them that are the values of swept axes
    mode: str
    repeat: int  # window.repeat
    steps: int  # a window's measured steps (window.steps), or runs for inference (window.runs)
    imgsz: int | None
    amp: bool | None
    threads: int | None
    settings: TuneSettings
    ranks: int = 1  # training ranks of each point (`device.nproc`, or a device list's length)


def split_series(
    loader: ConfigLoader, arguments: Sequence[str]
) -> list[tuple[list[str], list[str]]]:
    """The series of `arguments` (sweeper params first, then the command line's overrides),
    in the basic sweeper's order: each one's overrides and, of them, the swept axes' values.
    UsageError for a batch or a swept `tune.*` key."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper  # pinned: hydra-core 1.3

    try:
        parsed = OverridesParser.create(config_loader=loader).parse_overrides(list(arguments))
        for override in parsed:
            key = override.key_or_group
            if key == "batch":
                raise UsageError(
                    f"hydra/sweeper=tune searches the batch itself: {override.input_line} "
                    "cannot be given",
                    hint="set its range with tune.batch_min and tune.batch_max",
                )
            if key.startswith("tune.") and override.is_sweep_override():
                raise UsageError(
                    f"{override.input_line}: a tune search runs with one set of tune.* "
                    "settings, which cannot be swept",
                    hint="run one search for each",
                )
        swept = {o.get_key_element() for o in parsed if o.is_sweep_override()}
        jobs = BasicSweeper.split_arguments(parsed, None)[0]
    except HydraException as err:  # a sweep the basic sweeper cannot cross (range of floats...)
        raise UsageError(
            f"hydra/sweeper=tune: {err}", hint="give each axis a list of values"
        ) from None
    return [(list(job), [o for o in job if o.split("=", 1)[0] in swept]) for job in jobs]


def tune_settings(tune: TuneConfig) -> TuneSettings:
    """The config's `tune` group as the search's settings."""

    def number(value: float | None) -> float | None:
        return None if value is None else float(value)

    return TuneSettings(
        goal=tune.goal.value,
        batch_min=tune.batch_min,
        batch_max=tune.batch_max,
        batch_step=tune.batch_step,
        min_gain_pct=float(tune.min_gain_pct),
        patience=tune.patience,
        percentile=tune.percentile,
        max_latency_ms=number(tune.max_latency_ms),
        memory_budget_mb=number(tune.memory_budget_mb),
        remeasure=tune.remeasure,
        rank_steps=tune.rank_steps,
    )


def series_of(overrides: Sequence[str], swept: Sequence[str], config: DictConfig) -> Series:
    """A series from its overrides, its swept values and its composed (job) config."""
    tune = OmegaConf.to_object(config.tune)
    assert isinstance(tune, TuneConfig)
    threads = config.get("threads")
    return Series(
        overrides=tuple(overrides),
        swept=tuple(swept),
        mode=ModeOption(config.mode).value,
        repeat=int(config.window.repeat),
        steps=int(config.window.runs if config.mode == "infer" else config.window.steps),
        imgsz=int(config.imgsz),
        amp=bool(config.amp),
        threads=None if threads is None else int(threads),
        settings=tune_settings(tune),
        ranks=requested_ranks(config.device),
    )


MAX_REMEASURE = 16  # tune_model's rule for tune.remeasure


def _positive(value: float | None) -> bool:
    return value is None or (math.isfinite(value) and 0 < value <= MAX_METRIC)


def check_settings(settings: TuneSettings) -> None:
    """UsageError for settings no search can run with."""
    low, high = settings.batch_min, settings.batch_max
    if low < 1:
        raise UsageError(f"tune.batch_min must be at least 1 (got {low})")
    if high < low:
        raise UsageError(f"tune.batch_max ({high}) must be at least tune.batch_min ({low})")
    if high > MAX_BATCH:
        raise UsageError(f"tune.batch_max must be at most {MAX_BATCH} (got {high})")
    if settings.batch_step < 1:
        raise UsageError(f"tune.batch_step must be at least 1 (got {settings.batch_step})")
    gain = settings.min_gain_pct
    if not (math.isfinite(gain) and 0 <= gain <= MAX_METRIC):
        raise UsageError(f"tune.min_gain_pct must be a percentage of at least 0 (got {gain:g})")
    if not 0 <= settings.patience <= MAX_PATIENCE:
        raise UsageError(
            f"tune.patience must be 0..{MAX_PATIENCE} doublings (got {settings.patience})"
        )
    if not _positive(settings.memory_budget_mb):
        raise UsageError(
            f"tune.memory_budget_mb must be a positive number of MB "
            f"(got {settings.memory_budget_mb:g})"
        )
    if not _positive(settings.max_latency_ms):
        raise UsageError(
            f"tune.max_latency_ms must be a positive number of ms (got {settings.max_latency_ms:g})"
        )
    if not 0 <= settings.remeasure <= MAX_REMEASURE:
        raise UsageError(
            f"tune.remeasure must be 0..{MAX_REMEASURE} more measurements of a busy point "
            f"(got {settings.remeasure})"
        )
    if not (settings.rank_steps == 0 or MIN_MEASURED <= settings.rank_steps <= MAX_BATCH):
        raise UsageError(
            f"tune.rank_steps must be 0 (no ranking window) or at least {MIN_MEASURED} "
            f"(got {settings.rank_steps}): a window measures one unsynced and one synced step"
        )
    if settings.percentile not in PERCENTILES:
        raise UsageError(
            f"tune.percentile must be 50, 90 or 99 (got {settings.percentile}): the latency "
            "percentiles a profile measures"
        )


def _check_ranks(series: Series) -> None:
    """UsageError for a search several ranks cannot run: a goal that tests trials' img/s (a
    run on several ranks measures one trial), or a batch range that does not split evenly."""
    ranks, settings = series.ranks, series.settings
    if ranks < 2:
        return
    if settings.goal != "maxfit":
        raise UsageError(
            f"tune.goal={settings.goal} on {ranks} ranks: it tests a gain on window.repeat "
            "trials, and a run on several ranks measures one trial",
            hint=f"tune.goal=maxfit searches the global batch on {ranks} ranks; for the "
            f"fastest batch sweep it as a grid: libreyolo-sweep -m batch={ranks},{2 * ranks},"
            f"{4 * ranks}",
        )
    if series.repeat > 1:
        raise UsageError(
            f"window.repeat={series.repeat} on {ranks} ranks: a run on several ranks measures "
            "one trial",
            hint="add window.repeat=1",
        )
    fixes = []
    if settings.batch_min % ranks:
        fixes.append(f"tune.batch_min={-(-settings.batch_min // ranks) * ranks}")
    if settings.batch_step % ranks:
        fixes.append(f"tune.batch_step={math.lcm(settings.batch_step, ranks)}")
    if settings.batch_max % ranks:
        fixes.append(f"tune.batch_max={max(ranks, settings.batch_max // ranks * ranks)}")
    if fixes:
        raise UsageError(
            f"on {ranks} ranks the global batch splits evenly, as libreyolo train splits it: "
            f"tune.batch_min, tune.batch_max and tune.batch_step must be multiples of {ranks} "
            f"(got {settings.batch_min}, {settings.batch_max} and {settings.batch_step})",
            hint=f"add {' '.join(fixes)}",
        )


def _check_goal(series: Series) -> None:
    """UsageError when the series lacks what its goal needs."""
    _check_ranks(series)
    settings = series.settings
    goal = settings.goal
    if goal in NEEDS_TRIALS and series.repeat < MIN_TRIALS:
        raise UsageError(
            f"tune.goal={goal} needs window.repeat >= {MIN_TRIALS} (got {series.repeat}): "
            "whether a bigger batch gains is a significance test on the trials' img/s",
            hint=f"add window.repeat={MIN_TRIALS}",
        )
    if goal != "latency":
        return
    if series.mode != "infer":
        raise UsageError(
            f"tune.goal=latency needs mode=infer (got mode={series.mode})", hint="add mode=infer"
        )
    if settings.max_latency_ms is None:
        raise UsageError(
            "tune.goal=latency needs tune.max_latency_ms", hint="e.g. tune.max_latency_ms=50"
        )


def rank_window(series: Series, settings: TuneSettings) -> tuple[str, ...]:
    """The overrides a knee series ranks a new size with (RANK_TRIALS trials of the ranking
    window's steps), or () where it ranks nothing: another goal, `tune.rank_steps=0` (the
    default), or a window the ranking one would not shorten."""
    if settings.goal != "knee" or settings.rank_steps == 0 or series.repeat <= RANK_TRIALS:
        return ()
    steps = settings.rank_steps
    if steps >= series.steps:
        return ()
    key = "window.runs" if series.mode == "infer" else "window.steps"
    return (f"{key}={steps}", f"window.repeat={RANK_TRIALS}")


def check_search(series: Sequence[Series], subdir: str) -> TuneSettings:
    """The search's one set of settings; UsageError when it cannot run (module docstring).
    `subdir` is the unresolved `hydra.sweep.subdir` template."""
    first = series[0]
    check_settings(first.settings)
    for each in series:
        _check_goal(each)
        if each.mode != first.mode:
            raise UsageError(
                f"a tune search measures one mode (got mode={first.mode} and mode={each.mode})",
                hint="run one search for each",
            )
        if each.settings != first.settings:
            raise UsageError(
                "the series of a tune search compose to different tune.* settings",
                hint="sweep no key that sets tune.*",
            )
    if not names_key(subdir, "batch"):
        raise UsageError(
            f"hydra.sweep.subdir {subdir!r} does not name the batch: the batches of a search "
            "would share a folder and overwrite each other's profile",
            hint=SUBDIR_HINT,
        )
    return first.settings
