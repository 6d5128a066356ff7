"""What `profile run --trainer` asks of libreyolo 1.x: the interpreter, the words, the refusals
(exit 2 before anything starts) and the command line a shell runs as is."""

from __future__ import annotations

import dataclasses
import os
import shlex
from pathlib import Path

import pytest

from libreyolo.config.schema import (
    ExecConfig,
    ExecMode,
    ModelConfig,
    ProfileConfig,
    TrainKeysConfig,
    mode_defaults,
)
from libreyolo.errors import MissingFileError, TrainerError
from libreyolo.measure.trainer.settings import (
    TrainerCommand,
    check_trainer_config,
    device_word,
    find_interpreter,
    train_words,
)
from tests.conftest import invoke


def _cfg(**changes: object) -> ProfileConfig:
    return dataclasses.replace(ProfileConfig(trainer="/env"), **changes)  # type: ignore[arg-type]


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_an_interpreter_is_taken_as_given_links_kept(tmp_path: Path) -> None:
    real = _executable(tmp_path / "base" / "python3.11")
    link = tmp_path / "env" / "bin" / "python"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)  # a virtual environment's python: its packages are the env's
    assert find_interpreter(str(link)) == str(link)
    assert find_interpreter(str(tmp_path / "env")) == str(link)


def test_an_environment_folder_gives_its_bin_python3(tmp_path: Path) -> None:
    python3 = _executable(tmp_path / "env" / "bin" / "python3")
    assert find_interpreter(str(tmp_path / "env")) == str(python3)


def test_a_missing_trainer_path_is_exit_2(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError, match="no such file or folder"):
        find_interpreter(str(tmp_path / "nowhere"))


def test_a_folder_without_python_and_a_plain_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TrainerError, match=r"no Python interpreter in this folder"):
        find_interpreter(str(tmp_path))
    plain = tmp_path / "notes.txt"
    plain.write_text("x")
    with pytest.raises(TrainerError, match="not an executable file"):
        find_interpreter(str(plain))


@pytest.mark.parametrize(
    ("ours", "theirs"), [("0", "0"), ("cuda", "0"), ("cuda:1", "1"), ("CPU", "cpu"), ("mps", "mps")]
)
def test_devices_in_1x_spelling(ours: str, theirs: str) -> None:
    assert device_word(ours) == theirs


@pytest.mark.parametrize("device", ["0,1", "cuda:x", "tpu"])
def test_several_or_unknown_devices_are_refused(device: str) -> None:
    with pytest.raises(TrainerError, match="one device"):
        device_word(device)


def test_the_flags_become_1x_words_then_the_train_args(tmp_path: Path) -> None:
    weights = tmp_path / "w.pt"
    weights.write_bytes(b"x")
    cfg = _cfg(
        model=ModelConfig(weights=str(weights)),
        batch=8,
        imgsz=320,
        amp=False,
        train_args=["mosaic=0.0", "optimizer=adamw"],
    )
    cfg = dataclasses.replace(
        cfg,
        device=dataclasses.replace(cfg.device, name="cpu"),
        dataset=dataclasses.replace(cfg.dataset, workers=2, cache=True),
    )
    assert train_words(cfg, "/data/coco.yaml") == (
        "data=/data/coco.yaml",
        f"model={weights}",
        "batch=8",
        "imgsz=320",
        "device=cpu",
        "workers=2",
        "amp=False",
        "cache=ram",
        "mosaic=0.0",
        "optimizer=adamw",
    )
    # a weights name that is not a file is 1.x's to resolve: passed as given
    assert train_words(_cfg(), "coco8.yaml")[1] == "model=LibreYOLO9t.pt"
    # --max-labels is 1.x's own key: passed on only when given
    assert "max_labels=100" in train_words(_cfg(max_labels=100), "coco8.yaml")
    assert not any(w.startswith("max_labels=") for w in train_words(_cfg(), "coco8.yaml"))


def test_the_training_key_flags_become_1x_words() -> None:
    keys = TrainKeysConfig(mosaic_prob=0.5, optimizer="adamw", ema=False, mosaic_scale=[0.6, 1.4])
    words = train_words(_cfg(train=keys, train_args=["hsv_prob=0.5"]), "coco8.yaml")
    assert words[-5:] == (
        "mosaic_prob=0.5",
        "mosaic_scale=0.6,1.4",
        "optimizer=adamw",
        "ema=false",
        "hsv_prob=0.5",
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"mode": mode_defaults("infer").mode}, "measures libreyolo 1.x's training"),
        ({"model": ModelConfig(size="s")}, "--size has no meaning"),
        ({"exec": ExecConfig(name=ExecMode.compile)}, "--exec has no meaning"),
        ({"exec": ExecConfig(channels_last=True)}, "--channels-last has no meaning"),
        ({"variants": ["trimmed_targets"]}, "--variant has no meaning"),
        ({"train_args": ["max_labels=100"]}, r"max_labels= is set by --max-labels"),
        ({"train_args": ["batch=8"]}, r"batch= is set by --batch"),
        ({"train_args": ["model=x.pt"]}, r"model= is set by --weights"),
        ({"train_args": ["project=/tmp/x"]}, "the profiler sets project= itself"),
        ({"train_args": ["profile_then_stop=false"]}, "the profiler sets"),
        ({"train_args": ["mosaic=0", "mosaic=1"]}, "given twice"),
        ({"train_args": ["mosaic=0", "mosaic_prob=1"]}, "given twice"),
        ({"train": TrainKeysConfig(mosaic_prob=0.5), "train_args": ["mosaic=0"]}, "given twice"),
        ({"train": TrainKeysConfig(no_aug_phase=True)}, "--no-aug-phase picks the phase"),
        ({"train_args": ["not a word"]}, "must be KEY=VALUE"),
    ],
)
def test_what_1x_cannot_take_is_refused(changes: dict[str, object], message: str) -> None:
    with pytest.raises(TrainerError, match=message):
        check_trainer_config(_cfg(**changes))


def test_the_command_line_pastes_into_a_shell(tmp_path: Path) -> None:
    env = tmp_path / "my env"
    python = _executable(env / "bin" / "python")
    script = _executable(env / "bin" / "libreyolo")
    command = TrainerCommand(
        python=str(python), words=("data=a b.yaml", "name=x;rm -rf ~"), threads=2
    )
    line = command.command_line()
    assert line.startswith(f"OMP_NUM_THREADS=2 {shlex.quote(str(script))} train ")
    assert shlex.split(line) == [
        "OMP_NUM_THREADS=2",
        str(script),
        "train",
        "data=a b.yaml",
        "name=x;rm -rf ~",
    ]
    assert command.environment() == {"OMP_NUM_THREADS": "2"}


def test_without_its_libreyolo_script_the_command_runs_1x_entry_point(tmp_path: Path) -> None:
    python = _executable(tmp_path / "env" / "bin" / "python")
    command = TrainerCommand(python=str(python), words=("batch=2",))
    assert shlex.split(command.command_line()) == [
        str(python),
        "-c",
        "from libreyolo.cli import entrypoint; entrypoint()",
        "train",
        "batch=2",
    ]


def test_the_cli_refuses_before_anything_runs(tmp_path: Path) -> None:
    project = tmp_path / "runs"
    result = invoke(
        [
            "profile",
            "run",
            "synthetic",
            "--trainer",
            str(tmp_path / "none"),
            "--project",
            str(project),
            "--device",
            "cpu",
        ]
    )
    assert result.status == 2
    assert result.stderr.count("\n") == 1 and "--trainer" in result.stderr
    assert not project.exists()
    bad = invoke(["profile", "run", "synthetic", "--trainer", "x", "--train-arg", "no-equals"])
    assert bad.status == 2 and "KEY=VALUE" in bad.stderr
    sized = invoke(
        [
            "profile",
            "run",
            "synthetic",
            "--trainer",
            str(tmp_path),
            "--size",
            "s",
            "--device",
            "cpu",
            "--project",
            str(project),
        ]
    )
    assert sized.status == 2 and "--size has no meaning" in sized.stderr
    assert not project.exists()


def test_train_args_compose_as_a_list(tmp_path: Path) -> None:
    from libreyolo.cli.measuring import _compose
    from libreyolo.cli.parser import build_parser

    words = [
        "profile",
        "run",
        "synthetic",
        "--trainer",
        "/env",
        "--train-arg",
        "a='b,c'",
        "--train-arg",
        "x=${y}",
        "--trainer-timeout",
        "12.5",
    ]
    args = build_parser(words).parse_args(words)
    args.words = words
    cfg, _ = _compose(args, "run")
    assert (cfg.trainer, cfg.train_args, cfg.trainer_timeout_s) == (
        "/env",
        ["a='b,c'", "x=${y}"],
        12.5,
    )
    assert os.fspath(cfg.trainer) == "/env"
