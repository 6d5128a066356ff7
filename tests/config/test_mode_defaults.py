"""One set of defaults per mode: the schema's constants, the composed config, the CLI's flags and
the collectors' settings all say the same (TrainSettings once said warmup 10 where `--help` and
the config said 5)."""

from __future__ import annotations

import dataclasses

import pytest

from libreyolo.cli.parser import build_parser
from libreyolo.config import FLAG_KEYS, compose_config
from libreyolo.config.schema import (
    INFER_BATCH,
    INFER_RUNS,
    INFER_WARMUP,
    RUN_BATCH,
    RUN_STEPS,
    RUN_WARMUP,
    ProfileConfig,
)
from libreyolo.measure.from_config import infer_settings, train_settings
from libreyolo.measure.infer import InferSettings
from libreyolo.measure.train import TrainSettings

ARGV = {"run": ["profile", "run", "synthetic"], "infer": ["profile", "infer"]}


def test_each_mode_composes_its_named_batch_and_window() -> None:
    run, infer = compose_config(["mode=run"]), compose_config(["mode=infer"])
    assert (run.batch, run.window.warmup, run.window.steps) == (RUN_BATCH, RUN_WARMUP, RUN_STEPS)
    assert (infer.batch, infer.window.warmup, infer.window.runs) == (
        INFER_BATCH,
        INFER_WARMUP,
        INFER_RUNS,
    )


@pytest.mark.parametrize("mode", ["run", "infer"])
def test_the_collectors_default_settings_are_the_composed_config(mode: str) -> None:
    cfg = compose_config([f"mode={mode}"])
    from_cfg = train_settings(cfg) if mode == "run" else infer_settings(cfg)
    default = TrainSettings() if mode == "run" else InferSettings()
    # `size` None (the checkpoint's own) exists only for direct callers; the config names one.
    assert dataclasses.replace(from_cfg, size=None) == default


@pytest.mark.parametrize("mode", ["run", "infer"])
def test_the_cli_flag_defaults_are_the_composed_config(mode: str) -> None:
    values = vars(build_parser().parse_args(ARGV[mode]))
    composed = compose_config([f"mode={mode}"])
    flags = {dest: key for dest, key in FLAG_KEYS.items() if values.get(dest) is not None}
    assert {"batch", "warmup", "imgsz", "device", "project"} <= set(flags)
    for dest, key in flags.items():
        assert values[dest] == _value(composed, key), f"--{dest}"


def _value(cfg: ProfileConfig, key: str) -> object:
    value: object = cfg
    for part in key.split("."):
        value = getattr(value, part)
    return value
