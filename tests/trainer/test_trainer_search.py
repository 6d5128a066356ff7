"""A `hydra/sweeper=tune` search of libreyolo 1.x's own trainer (`trainer=`, the fake 1.x):
its answer is the trainer's command at the recommended batch, pasted as is, and `tuned.yaml`
holds the same settings."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.sweep.helpers import tune_argv
from tests.trainer.fake_env import fake_environment

pytestmark = pytest.mark.slow


def test_the_answer_is_the_trainers_own_command(tmp_path: Path) -> None:
    env = fake_environment(tmp_path / "env")
    sweep = tmp_path / "sweep"
    argv = tune_argv(
        sweep,
        "tune.goal=maxfit",
        "tune.batch_max=2",
        "tune.batch_step=1",
        f"trainer={env}",
        "train_args=['images=64']",
        "threads=1",
        mode="run",
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    record = json.loads((sweep / "tune.json").read_text(encoding="utf-8"))
    (recommended,) = record["recommended"]
    batch = recommended["batch"]
    command = recommended["train_command"]
    words = shlex.split(command)
    assert words[0] == "OMP_NUM_THREADS=1" and words[1] == str(env)
    assert words[4] == "train" and f"batch={batch}" in words and "images=64" in words
    assert "threads=1" not in words  # no such key in 1.x: its thread cap is the variable
    lines = done.stdout.splitlines()
    assert f"train: {command}" in lines
    assert lines[lines.index(f"train: {command}") + 1] == (
        "config: tuned.yaml; workers=0 as given, not searched"
    )
    text = (sweep / "tuned.yaml").read_text(encoding="utf-8")
    assert text.splitlines()[2] == f"# train: {command}"
    settings = yaml.safe_load(text)
    assert (settings["batch"], settings["trainer"], settings["train_args"]) == (
        batch,
        str(env),
        ["images=64"],
    )
    assert settings["threads"] == 1


def _on_cpu0() -> None:
    os.sched_setaffinity(0, {0})


def test_on_a_busy_host_the_search_writes_no_answer(tmp_path: Path) -> None:
    env = fake_environment(tmp_path / "env")
    sweep = tmp_path / "sweep"
    argv = tune_argv(
        sweep,
        "tune.batch_max=1",
        "window.repeat=3",
        "tune.remeasure=0",
        f"trainer={env}",
        "train_args=['images=64']",
        "threads=1",
        mode="run",
    )
    # The fake trainer's step at 64 px is 2 ms of CPU, over before the scheduler takes CPU 0
    # from a waking probe (one CI run in five measured no wait at all): at 320 px it is tens of
    # ms, and two busy loops share CPU 0 with the whole search, so its steps wait for the CPU.
    argv[argv.index("imgsz=64")] = "imgsz=320"
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=_on_cpu0)
        for _ in range(2)
    ]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=600, check=False, preexec_fn=_on_cpu0
        )
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert done.returncode == 1, done.stderr
    record = json.loads((sweep / "tune.json").read_text(encoding="utf-8"))
    (series,) = record["series"]
    assert [step["contended"] for step in series["path"]] == [True]  # its own figures say so
    assert series["stopped"] == "contended" and record["recommended"] == []
    assert series["why"].startswith("batch 1 measured on a busy host 1 time")
    assert not (sweep / "tuned.yaml").exists()
    assert "no recommendation: batch 1 measured on a busy host" in done.stdout
