"""`run` and `infer`: flags -> Hydra-composed config -> collector -> outcome.

Imported only by those two commands: it pulls in Hydra here and torch in the collectors.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from libreyolo.analysis.outcome import ConfigView, Outcome, outcome
from libreyolo.analysis.repeat import aggregate
from libreyolo.config.compose import as_plain_dict, compose_config, config_yaml
from libreyolo.config.overrides import to_overrides
from libreyolo.config.schema import ProfileConfig
from libreyolo.document.files import save
from libreyolo.document.model import Profile
from libreyolo.measure import profile_inference, profile_training

REPEAT_FILES = {"infer": "infer_repeat.json", "run": "profile_repeat.json"}
# Kineto logs "gpuGetDeviceCount failed" at ERROR level on every CPU-only run; it means nothing
# to a user and would hide our own one-line diagnostics.
os.environ.setdefault("KINETO_LOG_LEVEL", "5")


@contextlib.contextmanager
def _one_line_warnings() -> Iterator[None]:
    """Python warnings (e.g. random weights) as one `warning: ...` line on stderr each."""

    def show(message: Warning | str, *args: object, **kwargs: object) -> None:
        sys.stderr.write(f"warning: {message}\n")

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show  # type: ignore[assignment]
        yield


def _typed(args: argparse.Namespace) -> set[str]:
    """The dests of the flags the user typed (and positionals given), not argparse defaults."""
    words = list(getattr(args, "words", []))
    typed = {dest for dest in ("data", "source") if getattr(args, dest, None) is not None}
    for dest in vars(args):
        flag = "--" + dest.replace("_", "-")
        negated = "--no-" + dest.replace("_", "-")
        if any(w in (flag, negated) or w.startswith(flag + "=") for w in words):
            typed.add(dest)
    return typed


def _compose(args: argparse.Namespace, mode: str) -> tuple[ProfileConfig, list[str]]:
    # With an experiment file, only typed flags override it: argparse defaults must not.
    only = _typed(args) if args.config else None
    overrides = to_overrides(vars(args), mode=None if args.config else mode, only=only)
    cfg = compose_config(
        overrides, config_dir=args.config_dir, config_name=args.config or "profile"
    )
    return cfg, overrides


def _infer_settings(cfg: ProfileConfig) -> Any:
    from libreyolo.measure.infer import InferSettings

    return InferSettings(
        weights=cfg.model.weights,
        size=cfg.model.size,
        source=cfg.source,
        batch=cfg.batch,
        imgsz=cfg.imgsz,
        half=cfg.half,
        amp_dtype=str(getattr(cfg.amp_dtype, "value", cfg.amp_dtype)),
        warmup=cfg.window.warmup,
        runs=cfg.window.runs,
        conf=cfg.conf,
        iou=cfg.iou,
        max_det=cfg.max_det,
        include_decode=cfg.include_decode,
        device=cfg.device.name,
        trace=cfg.trace,
        project=cfg.project,
    )


def _train_settings(cfg: ProfileConfig) -> Any:
    from libreyolo.measure.train import TrainSettings

    return TrainSettings(
        data=str(cfg.dataset.name_or_path),
        weights=cfg.model.weights,
        size=cfg.model.size,
        batch=cfg.batch,
        imgsz=cfg.imgsz,
        workers=cfg.dataset.workers,
        amp=cfg.amp,
        steps=cfg.window.steps,
        warmup=cfg.window.warmup,
        device=cfg.device.name,
        project=cfg.project,
    )


def _with_config(profile: Profile, cfg: ProfileConfig, overrides: list[str]) -> Profile:
    config = dict(profile.run.config) | {"resolved": as_plain_dict(cfg)}
    run = dataclasses.replace(profile.run, config=config, overrides=list(overrides))
    return dataclasses.replace(profile, run=run)


def measure(
    args: argparse.Namespace, mode: str, progress: Callable[..., None] | None
) -> Outcome | ConfigView:
    """Compose, measure `--repeat` trials, write the profile(s) and return the outcome."""
    cfg, overrides = _compose(args, mode)
    if args.print_config:
        return ConfigView(as_plain_dict(cfg), config_yaml(cfg))
    collect, settings = (
        (profile_inference, _infer_settings(cfg))
        if mode == "infer"
        else (profile_training, _train_settings(cfg))
    )
    trials: list[Profile] = []
    for _ in range(cfg.window.repeat):
        with _one_line_warnings():
            profile, path = collect(settings, on_progress=progress)
        profile = _with_config(profile, cfg, overrides)
        save(profile, path, overwrite=True)
        trials.append(profile)
    if len(trials) > 1:
        profile = aggregate(trials)
        path = save(profile, Path(cfg.project) / REPEAT_FILES[mode], overwrite=True)
    trace = profile.artifacts.trace
    trace_path = str(path.parent / trace) if trace else None
    return outcome(profile, str(path), trace_path)
