"""From a composed ProfileConfig to collector settings, and back into the profile.

Shared by the two entry points that measure (`libreyolo profile run|infer` and
`libreyolo-sweep`), so both turn the same config into the same measurement.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import ProfileConfig
from libreyolo.document.model import Profile

# Kineto logs "gpuGetDeviceCount failed" at ERROR level on every CPU-only run; it means nothing
# to a user and would hide our own one-line diagnostics.
os.environ.setdefault("KINETO_LOG_LEVEL", "5")


@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    """Python warnings (e.g. random weights) as one `warning: ...` line on stderr each."""

    def show(message: Warning | str, *args: object, **kwargs: object) -> None:
        sys.stderr.write(f"warning: {message}\n")

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        yield


def infer_settings(cfg: ProfileConfig) -> Any:
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
        fuse=cfg.model.fuse,
        device=cfg.device.name,
        trace=cfg.trace,
        project=cfg.project,
    )


def train_settings(cfg: ProfileConfig) -> Any:
    from libreyolo.measure.train import TrainSettings

    return TrainSettings(
        data=str(cfg.dataset.name_or_path),
        weights=cfg.model.weights,
        size=cfg.model.size,
        batch=cfg.batch,
        imgsz=cfg.imgsz,
        workers=cfg.dataset.workers,
        cache=cfg.dataset.cache,
        amp=cfg.amp,
        steps=cfg.window.steps,
        warmup=cfg.window.warmup,
        device=cfg.device.name,
        project=cfg.project,
    )


def with_config(
    profile: Profile, cfg: ProfileConfig, overrides: list[str], held_device: str | None = None
) -> Profile:
    config = dict(profile.run.config) | {"resolved": as_plain_dict(cfg)}
    run = dataclasses.replace(
        profile.run, config=config, overrides=list(overrides), held_device=held_device
    )
    return dataclasses.replace(profile, run=run)


def measure_once(
    cfg: ProfileConfig,
    overrides: list[str],
    on_progress: Callable[[str, int, int], None] | None,
    held_device: str | None = None,
) -> tuple[Profile, Path]:
    """One measurement of `cfg` (infer or run): collect, record the config, save the profile."""
    from libreyolo.document.files import save
    from libreyolo.measure import profile_inference, profile_training

    if cfg.mode.value == "infer":
        profile, path = _collect(profile_inference, infer_settings(cfg), on_progress)
    else:
        profile, path = _collect(profile_training, train_settings(cfg), on_progress)
    profile = with_config(profile, cfg, overrides, held_device)
    save(profile, path, overwrite=True)
    return profile, path


REPEAT_FILES = {"infer": "infer_repeat.json", "run": "profile_repeat.json"}


def measure_config(
    cfg: ProfileConfig,
    overrides: list[str],
    on_progress: Callable[[str, int, int], None] | None,
    held_device: str | None = None,
) -> tuple[Profile, Path]:
    """`cfg.window.repeat` measurements of `cfg`; with more than one, the aggregate profile is
    written to `<project>/{infer,profile}_repeat.json` and returned."""
    from libreyolo.analysis.repeat import aggregate
    from libreyolo.document.files import save

    trials = [
        measure_once(cfg, overrides, on_progress, held_device)
        for _ in range(max(1, cfg.window.repeat))
    ]
    if len(trials) == 1:
        return trials[0]
    profile = aggregate([trial for trial, _ in trials])
    path = save(profile, Path(cfg.project) / REPEAT_FILES[cfg.mode.value], overwrite=True)
    return profile, path


def _collect(
    collect: Callable[..., tuple[Profile, Path]],
    settings: Any,
    on_progress: Callable[[str, int, int], None] | None,
) -> tuple[Profile, Path]:
    with one_line_warnings():
        return collect(settings, on_progress=on_progress)
