"""From a composed ProfileConfig to a measurement: the collector of its mode, its trials, and
what the run was given (overrides, the held device) recorded in the profile.

Shared by the two entry points that measure (`libreyolo profile run|infer` and
`libreyolo-sweep`), so both turn the same config into the same measurement. The collectors
take the `ProfileConfig` itself (no settings copy) and store it, resolved, as `run.config`.

Must not: write to stdout or stderr: warnings and notes go to the `notice` its caller hands in.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec.structs

from libreyolo.config.schema import ProfileConfig
from libreyolo.document.mode import Mode
from libreyolo.document.model import Profile
from libreyolo.errors import UsageError

if TYPE_CHECKING:
    from libreyolo.measure.artifacts import StagedRun
    from libreyolo.measure.world import Joined, WorldPlan


class Note(UserWarning):
    """Something the run changed on the user's behalf: shown as one `note: ...` line."""


Notice = Callable[[str, str], None]  # (label "warning" | "note", text): one line for people


@contextlib.contextmanager
def one_line_warnings(notice: Notice) -> Iterator[None]:
    """Python warnings (e.g. random weights) handed to `notice` as one line each, each distinct
    line once: the caller's `Output.notice` (the sweep's points: a line in `point.log`). The
    profile records what they say, so a caller may drop them (the CLI does under --json, where
    stderr holds at most the error object). Writing them is the caller's: this package never
    prints."""

    shown: set[tuple[str, str]] = set()

    def show(message: Warning | str, category: type[Warning], *args: object, **kw: object) -> None:
        line = ("note" if issubclass(category, Note) else "warning", str(message))
        if line not in shown:  # each `--repeat` trial warns again: say each thing once
            shown.add(line)
            notice(*line)

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        yield


def with_config(
    profile: Profile,
    overrides: list[str],
    held_device: str | None = None,
) -> Profile:
    """`profile` with the overrides and the held device recorded (the collector has stored the
    resolved config itself)."""
    run = msgspec.structs.replace(profile.run, overrides=list(overrides), held_device=held_device)
    return msgspec.structs.replace(profile, run=run)


def rounded_imgsz(cfg: ProfileConfig) -> tuple[ProfileConfig, list[str]]:
    """`cfg` with imgsz rounded up to a multiple of the model's stride (the size the network
    can take, and so the size measured), and the note that says so; `cfg` itself otherwise.
    The stride is the configured family's (`model.family`); libreyolo 1.x's trainer
    (`trainer`) takes the size as given."""
    from libreyolo.workload.registry import family

    if cfg.trainer is not None:
        return cfg, []
    STRIDE = family(cfg.model.family).stride

    if cfg.imgsz <= 0 or cfg.imgsz % STRIDE == 0:
        return cfg, []
    size = -(-cfg.imgsz // STRIDE) * STRIDE
    note = f"--imgsz {cfg.imgsz} rounded to {size} (a multiple of the model stride {STRIDE})"
    warnings.warn(note, Note, stacklevel=2)
    return dataclasses.replace(cfg, imgsz=size), [note]


def measure_config(
    cfg: ProfileConfig,
    overrides: list[str],
    on_progress: Callable[[str, int, int], None] | None,
    held_device: str | None = None,
    *,
    notice: Notice,
) -> tuple[Profile, Path]:
    """`cfg.window.repeat` measurements of `cfg` (infer or run) into one staged set, committed
    once: `profile.json` is the last trial with its config, and with more than one trial the
    aggregate `{infer,profile}_repeat.json` lies beside it (reached through its link at
    `<project>/`, the path returned with it). On several ranks (`measure/world.py`) the set
    holds each rank's profile in `rank<i>/` and `profile.json` is the world's. The output
    folder is checked before any model is built; memory or disk exhaustion anywhere ends as
    its one-line error (exit 3)."""
    from libreyolo.analysis.repeat import aggregate
    from libreyolo.measure.artifacts import PROFILE_NAME, REPEAT_NAMES, StagedRun, set_dir
    from libreyolo.measure.assemble import commit_set
    from libreyolo.measure.failures import resource_failures
    from libreyolo.measure.trials import measure_trials
    from libreyolo.measure.world import (
        joined_world,
        measure_world,
        plan_world,
        world_documents,
    )

    check_trainer_named(cfg, overrides)
    joined = joined_world()
    world = plan_world(cfg, joined)
    if joined is not None and world is not None:
        return _measure_joined(cfg, overrides, on_progress, held_device, joined, world, notice)
    num_trials = max(1, cfg.window.repeat)
    with one_line_warnings(notice), resource_failures():
        target = set_dir(cfg.project, cfg.mode.value)
        repeat_name = REPEAT_NAMES[target.name]
        with StagedRun(target, aggregate=num_trials > 1) as run:
            cfg, notes = rounded_imgsz(cfg)  # after the folder check: a refusal is one line
            if world is not None:
                ranks = measure_world(cfg, run, world, on_progress, notes)
                ranks = [with_config(rank, overrides, held_device) for rank in ranks]
                documents = world_documents(cfg, ranks, world, launcher="spawn")
                commit_set(run, documents)
                return documents[PROFILE_NAME], target / PROFILE_NAME
            measured = measure_trials(cfg, run, on_progress, notes, num_trials)
            trials = [with_config(trial, overrides, held_device) for trial in measured]
            documents = {PROFILE_NAME: trials[-1]}
            if num_trials > 1:
                documents[repeat_name] = aggregate(trials)
            commit_set(run, documents)
    if num_trials == 1:
        return trials[-1], target / PROFILE_NAME
    return documents[repeat_name], target.parent / repeat_name


def _measure_joined(
    cfg: ProfileConfig,
    overrides: list[str],
    on_progress: Callable[[str, int, int], None] | None,
    held_device: str | None,
    joined: Joined,
    world: WorldPlan,
    notice: Notice,
) -> tuple[Profile, Path]:
    """This rank's part of a world torchrun started (`world.measure_joined`): rank 0 commits
    the set and returns the world profile; another rank returns its own, in its folder."""
    from libreyolo.measure.artifacts import PROFILE_NAME, StagedRun, set_dir
    from libreyolo.measure.assemble import commit_set
    from libreyolo.measure.failures import resource_failures
    from libreyolo.measure.world import measure_joined, world_documents

    target = set_dir(cfg.project, cfg.mode.value)
    with one_line_warnings(notice), resource_failures():
        cfg, notes = rounded_imgsz(cfg)
        ranks, run, mine = measure_joined(
            cfg, world, joined, on_progress, notes, lambda: StagedRun(target)
        )
        if run is None:
            path = target / f"rank{joined.rank}" / PROFILE_NAME
            return with_config(mine, overrides, held_device), path
        with run:
            measured = [with_config(rank, overrides, held_device) for rank in ranks]
            documents = world_documents(cfg, measured, world, launcher="torchrun")
            commit_set(run, documents)
    return documents[PROFILE_NAME], target / PROFILE_NAME


def check_trainer_named(cfg: ProfileConfig, overrides: list[str]) -> None:
    """UsageError when `trainer` (a program this run would start) comes from a config file
    rather than from what the user typed: a file is input, and runs nothing unless named."""
    from libreyolo.config.overrides import override_keys

    if cfg.trainer is not None and "trainer" not in override_keys(overrides):
        raise UsageError(
            f"the config file sets trainer: {cfg.trainer}, a program this run would start; "
            "it is started only when named",
            hint=f"pass --trainer {cfg.trainer} (libreyolo-sweep: trainer=...) to run it",
        )


def collect_trial(
    cfg: ProfileConfig,
    run: StagedRun,
    on_progress: Callable[[str, int, int], None] | None,
    notes: Sequence[str],
) -> Profile:
    """One trial of `cfg` measured into `run` by this process (or the trainer probe's, which
    records its own pid); `notes` (what composing it changed) open the profile's own list."""
    from libreyolo.measure import profile_inference, profile_training

    if cfg.trainer is not None:  # libreyolo 1.x's own trainer, in its own environment
        from libreyolo.measure.trainer.collect import profile_trainer

        profile, _ = profile_trainer(cfg, on_progress=on_progress, into=run, notes=notes)
        return profile
    if cfg.mode.measures == Mode.INFER:
        profile, _ = profile_inference(cfg, on_progress=on_progress, into=run, notes=notes)
    else:
        profile, _ = profile_training(cfg, on_progress=on_progress, into=run, notes=notes)
    return msgspec.structs.replace(
        profile, run=msgspec.structs.replace(profile.run, pid=os.getpid())
    )
