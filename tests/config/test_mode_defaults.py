"""One set of defaults per mode: `libreyolo.defaults`, the schema's `mode_defaults`, the packaged
conf/mode/*.yaml as composed, the CLI's flags and their `--help` all say the same (a settings
copy once said warmup 10 where `--help` and the config said 5)."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from libreyolo import defaults
from libreyolo.cli.parser import build_parser
from libreyolo.config import FLAG_KEYS, compose_config
from libreyolo.config.schema import ModeOption, ProfileConfig, WindowConfig, mode_defaults
from tests.conftest import invoke

ARGV = {"run": ["profile", "run", "synthetic"], "infer": ["profile", "infer"]}


@pytest.mark.parametrize("mode", ["run", "infer"])
def test_the_packaged_mode_files_compose_to_exactly_the_mode_defaults(mode: str) -> None:
    # The YAML files repeat the per-mode values for readers: any drift from the constants fails.
    assert compose_config([f"mode={mode}"]) == mode_defaults(mode)


def test_each_mode_defaults_to_its_named_constants() -> None:
    run, infer = mode_defaults(ModeOption.run), mode_defaults(ModeOption.infer)
    assert (run.mode, run.batch, run.imgsz) == (
        ModeOption.run,
        defaults.RUN_BATCH,
        defaults.RUN_IMGSZ,
    )
    assert run.window == WindowConfig(
        warmup=defaults.RUN_WARMUP, steps=defaults.RUN_STEPS, runs=defaults.INFER_RUNS
    )
    assert (infer.mode, infer.batch, infer.imgsz) == (
        ModeOption.infer,
        defaults.INFER_BATCH,
        defaults.INFER_IMGSZ,
    )
    assert (infer.window.warmup, infer.window.runs) == (defaults.INFER_WARMUP, defaults.INFER_RUNS)
    # Beyond the batch, the size and the window, both modes share every default.
    same = {"mode": ModeOption.run, "batch": run.batch, "imgsz": run.imgsz, "window": run.window}
    assert dataclasses.replace(infer, **same) == run


@pytest.mark.parametrize("mode", ["run", "infer"])
def test_the_cli_flag_defaults_are_the_mode_defaults(mode: str) -> None:
    values = vars(build_parser().parse_args(ARGV[mode]))
    expected = mode_defaults(mode)
    flags = {dest: key for dest, key in FLAG_KEYS.items() if values.get(dest) is not None}
    assert {"batch", "warmup", "imgsz", "device", "project", "weights"} <= set(flags)
    for dest, key in flags.items():
        if dest == "data":  # the positional argument given above, not a default
            continue
        assert values[dest] == _value(expected, key), f"--{dest}"


@pytest.mark.parametrize(
    ("mode", "shown"),
    [
        (
            "run",
            {
                "--weights": defaults.WEIGHTS,
                "--batch": defaults.RUN_BATCH,
                "--imgsz": defaults.RUN_IMGSZ,
                "--workers": defaults.WORKERS,
                "--steps": defaults.RUN_STEPS,
                "--warmup": defaults.RUN_WARMUP,
                "--repeat": defaults.REPEAT,
                "--device": defaults.DEVICE,
                "--project": defaults.PROJECT,
                "--cache": "--no-cache",
                "--amp": "--amp",
            },
        ),
        (
            "infer",
            {
                "--batch": defaults.INFER_BATCH,
                "--warmup": defaults.INFER_WARMUP,
                "--runs": defaults.INFER_RUNS,
                "--conf": defaults.CONF,
                "--iou": defaults.IOU,
                "--max-det": defaults.MAX_DET,
                "--amp-dtype": defaults.AMP_DTYPE,
                "--fuse": defaults.FUSE,
                "--half": "--no-half",
                "--trace": "--trace",
            },
        ),
    ],
)
def test_help_shows_each_default(mode: str, shown: dict[str, object]) -> None:
    helps = _expanded_help(mode)
    for flag, value in shown.items():
        assert helps[flag].endswith(f"(default: {value})"), flag
    result = invoke(["profile", mode, "--help"])  # and --help prints those texts
    assert result.status == 0
    assert " ".join(helps["--warmup"].split()) in " ".join(result.stdout.split())


def _expanded_help(mode: str) -> dict[str, str]:
    """Each option of `profile <mode>` -> its help text as `--help` prints it (unwrapped)."""
    parser = _subparser(_subparser(build_parser(), "profile"), mode)
    formatter = parser._get_formatter()
    return {
        action.option_strings[0]: formatter._expand_help(action)
        for action in parser._actions
        if action.option_strings and action.help
    }


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    group = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    child: argparse.ArgumentParser = group.choices[name]
    return child


def _value(cfg: ProfileConfig, key: str) -> object:
    value: object = cfg
    for part in key.split("."):
        value = getattr(value, part)
    return value
