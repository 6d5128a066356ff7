"""The trainer probe and its driver, on a fake libreyolo 1.x (fake_v1/): the profile it makes,
and every way the trainer can fail (exit status, one line, no profile, no process left)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from libreyolo.document.files import load
from libreyolo.known_trainer import known_trainer
from libreyolo.measure.trainer.collect import round_to_accumulation, start_on_epoch
from libreyolo.measure.window import plan_window
from tests.conftest import invoke
from tests.trainer.fake_env import fake_environment

pytestmark = pytest.mark.slow


def _probes_alive() -> list[int]:
    """Pids of trainer probes still running anywhere on this machine."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if b"trainer_probe.py" in cmdline:
            alive.append(int(entry))
    return alive


def _run(env: Path, project: Path, *extra: str, steps: int = 4, warmup: int = 1) -> object:
    return invoke(
        [
            "profile", "run", "synthetic", "--trainer", str(env), "--device", "cpu",
            "--batch", "4", "--imgsz", "64", "--workers", "0", "--warmup", str(warmup),
            "--steps", str(steps), "--project", str(project), *extra,
        ]
    )  # fmt: skip


@pytest.fixture
def env(tmp_path: Path) -> Path:
    return fake_environment(tmp_path / "env")


def test_the_trainers_steps_become_a_profile(env: Path, tmp_path: Path) -> None:
    result = _run(env, tmp_path / "runs", "--json", "--train-arg", "images=64")
    assert result.status == 0, result.stderr
    profile = load(str(tmp_path / "runs" / "run" / "profile.json"))
    trainer = profile.run.trainer
    assert trainer is not None
    assert (trainer.python, trainer.libreyolo) == (str(env), "1.6.0")
    assert trainer.argv[2:] == ["batch=4", "imgsz=64", "device=cpu", "workers=0", "amp=True",
                                "images=64"]  # fmt: skip
    assert trainer.command is not None and "train data=" in trainer.command
    assert (profile.run.model, profile.run.family, profile.run.batch) == ("Fake-t", "fake", 4)
    assert (profile.run.batches_per_epoch, profile.run.num_images) == (16, None)
    window = profile.window
    assert (window.num_warmup, window.num_measured, window.num_unsynced, window.num_bare) == (
        1, 4, 2, 2
    )  # fmt: skip
    steps = profile.samples.steps
    assert [s.synced for s in steps] == [False, False, True, True]
    assert all(s.dataload_ms is not None for s in steps if not s.synced)
    assert set(steps[-1].phase_ms) == {"dataload", "to_device", "forward", "backward", "optimizer"}
    assert len(profile.samples.bare_ms) == 2
    assert profile.host is not None and profile.host.measurable
    assert all(s.cpu_ms is not None and s.cpu_ms > 0 for s in steps), steps  # sampled outside
    assert profile.host_memory is not None and profile.host_memory.peak_rss_bytes
    assert profile.trace is not None and profile.trace.num_steps == 2
    assert {p.name for p in profile.trace.phases} >= {"forward", "backward", "optimizer"}
    assert profile.metrics["img_per_s"] and profile.metrics["img_per_s"] > 0
    assert profile.environment.torch is not None and profile.environment.num_threads
    assert (tmp_path / "runs" / "run" / "profile_trace.json").is_file()
    assert _probes_alive() == []
    assert known_trainer() == str(env)  # `libreyolo train` here now names this environment
    path = str(tmp_path / "runs" / "run" / "profile.json")
    lines = invoke(["profile", "summary", path]).stdout.splitlines()
    assert (
        lines[1]
        == f"trainer  libreyolo 1.6.0's own train (torch {profile.environment.torch}, {env})"
    )
    assert lines[2] == f"train    {trainer.command}"
    run = invoke(["profile", "summary", path, "--json"]).json()["run"]  # type: ignore[attr-defined]
    assert run["train_command"] == trainer.command
    page = tmp_path / "page.html"
    assert invoke(["profile", "report", path, "-o", str(page)]).status == 0
    assert "<dt>trainer</dt>" in page.read_text(encoding="utf-8")


def test_a_version_without_the_hook_points_is_refused_naming_them(tmp_path: Path) -> None:
    env = fake_environment(tmp_path / "env", FAKE_WITHOUT="_prof_phase,profile_then_stop")
    result = _run(env, tmp_path / "runs")
    assert result.status == 3
    assert result.stderr.count("\n") == 1
    assert "lacks the hook points" in result.stderr
    assert "libreyolo.training.trainer:BaseTrainer._prof_phase" in result.stderr
    assert "libreyolo.training.config:TrainConfig.profile_then_stop" in result.stderr
    assert not (tmp_path / "runs").exists()


def test_an_environment_that_is_not_libreyolo_1x_is_exit_2(tmp_path: Path) -> None:
    env = fake_environment(tmp_path / "env", FAKE_LIBREYOLO_VERSION="2.0.0")
    result = _run(env, tmp_path / "runs")
    assert result.status == 2 and "its libreyolo is 2.0.0" in result.stderr
    assert "not libreyolo 1.x" in result.stderr


def test_this_packages_own_environment_is_not_a_trainer(tmp_path: Path) -> None:
    result = _run(Path(sys.executable), tmp_path / "runs")
    assert result.status == 2
    assert "not libreyolo 1.x" in result.stderr or "cannot import" in result.stderr


def test_an_environment_without_torch_or_libreyolo_is_exit_2(tmp_path: Path) -> None:
    python = tmp_path / "env" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')  # no site-packages
    python.chmod(0o755)
    result = _run(python, tmp_path / "runs")
    assert result.status == 2
    assert "cannot import torch and libreyolo there" in result.stderr


def test_settings_1x_refuses_are_exit_2_with_its_line(env: Path, tmp_path: Path) -> None:
    result = _run(env, tmp_path / "runs", "--train-arg", "bogus_key=1")
    assert result.status == 2
    assert "libreyolo train refused the settings: Error [config_unknown_key]" in result.stderr
    assert "bogus_key" in result.stderr
    missing = _run(env, tmp_path / "runs", "--train-arg", "fake=exit")
    assert missing.status == 2 and "Error [data_not_found]" in missing.stderr
    assert not (tmp_path / "runs").exists()


def test_a_crash_mid_window_leaves_no_profile_and_no_process(env: Path, tmp_path: Path) -> None:
    project = tmp_path / "runs"
    assert _run(env, project).status == 0
    before = (project / "run" / "profile.json").read_bytes()
    listing = sorted(p.name for p in project.rglob("*"))
    result = _run(env, project, "--train-arg", "fake=crash")
    assert result.status == 3
    assert result.stderr.count("\n") == 1
    assert "libreyolo train failed: RuntimeError: the fake trainer crashed in step 3" in (
        result.stderr
    )
    assert (project / "run" / "profile.json").read_bytes() == before  # the old one, untouched
    assert sorted(p.name for p in project.rglob("*")) == listing  # nothing added or half
    assert _probes_alive() == []


def test_a_silent_trainer_is_stopped_after_the_timeout(env: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    result = _run(env, tmp_path / "runs", "--train-arg", "fake=hang", "--trainer-timeout", "3")
    assert time.monotonic() - started < 60
    assert result.status == 3
    assert "silent for 3 s" in result.stderr and "--trainer-timeout" in result.stderr
    assert not (tmp_path / "runs").exists()
    assert _probes_alive() == []


def test_garbage_on_the_event_pipe_is_a_failed_run(env: Path, tmp_path: Path) -> None:
    result = _run(env, tmp_path / "runs", "--train-arg", "fake=garbage")
    assert result.status == 3 and "not an event" in result.stderr
    assert _probes_alive() == []


def test_what_1x_prints_never_reaches_our_stdout(env: Path, tmp_path: Path) -> None:
    result = _run(env, tmp_path / "runs", "--json", "--train-arg", "fake=chatty")
    assert result.status == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["img_per_s"] > 0
    assert "step 1" not in result.stdout + result.stderr


def test_an_epoch_too_short_for_the_steps_is_exit_3(env: Path, tmp_path: Path) -> None:
    result = _run(env, tmp_path / "runs", "--train-arg", "images=8")  # 2 batches an epoch
    assert result.status == 3
    assert "the 4 measured steps need 4 batches in one epoch" in result.stderr
    assert "fewer --steps" in result.stderr
    assert _probes_alive() == []


def test_the_window_starts_on_an_epoch_when_the_current_one_cannot_hold_it(
    env: Path, tmp_path: Path
) -> None:
    # 8 batches an epoch; warmup 3 + 4 measured + 2 bare would cross into the second epoch
    result = _run(env, tmp_path / "runs", "--warmup", "3", "--train-arg", "images=32")
    assert result.status == 0, result.stderr
    profile = load(str(tmp_path / "runs" / "run" / "profile.json"))
    assert profile.window.num_warmup == 8
    assert any("warmup extended from 3 to 8 steps" in note for note in profile.notes)
    assert not any("an epoch began inside the window" in note for note in profile.notes)


def test_ctrl_c_stops_the_trainer_and_leaves_nothing(env: Path, tmp_path: Path) -> None:
    project = tmp_path / "runs"
    argv = [
        sys.executable, "-m", "libreyolo", "profile", "run", "synthetic", "--trainer", str(env),
        "--device", "cpu", "--batch", "4", "--imgsz", "64", "--workers", "0", "--warmup", "1",
        "--steps", "4", "--project", str(project), "--train-arg", "fake=hang",
    ]  # fmt: skip
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not _probes_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    probes = _probes_alive()
    assert probes, "the probe never started"
    time.sleep(2)  # inside 1.x's setup or the hang
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    for pid in probes:
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid)
    assert not project.exists() or not any(project.rglob("profile.json"))


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True


def test_the_window_starts_on_an_epoch_only_when_it_must() -> None:
    plan = plan_window(3, 4)  # 2 bare: the window needs 6 batches
    assert start_on_epoch(plan, 8) == (plan.__class__(8, 4, 2, True), start_on_epoch(plan, 8)[1])
    assert start_on_epoch(plan, 9)[0] is plan  # 3 + 6 fit in 9
    assert start_on_epoch(plan_window(8, 4), 8)[0].num_warmup == 8  # already on an epoch
    assert start_on_epoch(plan_window(10, 4), 8)[0].num_warmup == 10  # 2 + 6 fit in 8
    assert start_on_epoch(plan_window(11, 4), 8)[0].num_warmup == 16


def test_accumulation_rounds_each_part_to_whole_optimizer_steps() -> None:
    plan = plan_window(5, 6)  # 3 unsynced, 3 synced, 3 bare
    rounded, note = round_to_accumulation(plan, 2)
    assert (rounded.num_warmup, rounded.num_unsynced, rounded.num_synced, rounded.num_bare) == (
        6, 4, 4, 4
    )  # fmt: skip
    assert note is not None and "2 accumulated batches" in note
    assert round_to_accumulation(plan, 1) == (plan, None)


def test_a_trainer_in_a_config_file_runs_only_when_named(env: Path, tmp_path: Path) -> None:
    folder = tmp_path / "conf" / "experiment"
    folder.mkdir(parents=True)
    (folder / "mine.yaml").write_text(
        f"# @package _global_\ntrainer: {env}\ntrain_args: ['images=64']\n", encoding="utf-8"
    )
    common = ["profile", "run", "synthetic", "--config-dir", str(tmp_path / "conf"),
              "--config", "experiment/mine", "--device", "cpu", "--batch", "4", "--imgsz", "64",
              "--workers", "0", "--warmup", "1", "--steps", "2"]  # fmt: skip
    project = tmp_path / "runs"
    refused = invoke([*common, "--project", str(project)])
    assert refused.status == 2
    assert f"the config file sets trainer: {env}, a program this run would start" in (
        refused.stderr
    )
    assert not project.exists() and _probes_alive() == []
    named = invoke([*common, "--project", str(project), "--trainer", str(env)])
    assert named.status == 0, named.stderr
    assert load(str(project / "run" / "profile.json")).run.trainer is not None
