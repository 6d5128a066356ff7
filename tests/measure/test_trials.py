"""`--repeat N`: each trial measured in a fresh process of its own (its pid in the aggregate),
or with `--repeat-in-process` all in this one; a trial's error comes back as itself, a trial
whose process dies fails the run (exit 3), and a stop or a killed parent leaves no process."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from libreyolo.errors import TrialCrashedError
from libreyolo.measure import trials
from libreyolo.measure.from_config import measure_config
from tests.configs import configured
from tests.conftest import ROOT, invoke
from tests.fixture_files import YOLO9T, fixture_file

CHECKPOINT = str(fixture_file(YOLO9T))
TINY = ["--device", "cpu", "--warmup", "0", "--runs", "2", "--imgsz", "64", "--no-trace"]


def _infer(project: Path, *extra: str) -> list[str]:
    return ["profile", "infer", "--weights", CHECKPOINT, *TINY, "--project", str(project), *extra]


def _trial_children() -> list[multiprocessing.process.BaseProcess]:
    return [p for p in multiprocessing.active_children() if p.name.startswith("libreyolo-trial")]


def test_each_trial_runs_in_a_fresh_process_of_its_own(tmp_path: Path) -> None:
    result = invoke([*_infer(tmp_path, "--repeat", "3"), "--json"])
    assert result.status == 0, result.stderr
    aggregate = json.loads((tmp_path / "infer_repeat.json").read_text())
    pids = [trial["pid"] for trial in aggregate["trials"]]
    assert len(set(pids)) == 3 and os.getpid() not in pids
    assert aggregate["run"]["isolated_trials"] is True
    assert aggregate["run"]["pid"] == pids[-1]  # the last trial's document
    summary = invoke(["profile", "summary", str(tmp_path / "infer_repeat.json")])
    line = f"trials   3, each in a fresh process (pids {', '.join(map(str, pids))}): scalar "
    assert [x for x in summary.stdout.splitlines() if x.startswith(line)], summary.stdout
    as_json = invoke(["profile", "summary", str(tmp_path / "infer_repeat.json"), "--json"]).json()
    assert isinstance(as_json, dict) and as_json["isolated_trials"] is True
    assert [row["pid"] for row in as_json["trials"]] == pids
    assert not _trial_children()


def test_repeat_in_process_keeps_every_trial_here(tmp_path: Path) -> None:
    result = invoke([*_infer(tmp_path, "--repeat", "2", "--repeat-in-process")])
    assert result.status == 0, result.stderr
    aggregate = json.loads((tmp_path / "infer_repeat.json").read_text())
    assert [trial["pid"] for trial in aggregate["trials"]] == [os.getpid()] * 2
    assert aggregate["run"]["isolated_trials"] is False
    assert aggregate["run"]["config"]["window"]["repeat_in_process"] is True
    summary = invoke(["profile", "summary", str(tmp_path / "infer_repeat.json")]).stdout
    line = "trials   2, all in one process (--repeat-in-process): scalar metrics are means over "
    assert f"{line}the trials" in summary.splitlines()


def test_a_single_trial_is_measured_here_and_says_nothing_of_isolation(tmp_path: Path) -> None:
    assert invoke(_infer(tmp_path)).status == 0
    profile = json.loads((tmp_path / "infer" / "profile.json").read_text())
    assert profile["run"]["pid"] == os.getpid() and profile["run"]["isolated_trials"] is None


def test_a_trials_error_comes_back_as_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No images in the source: the child's error is the same line and exit as in-process."""
    forked: list[int] = []
    real = trials._in_fresh_process

    def counted(*args: object, **kwargs: object) -> object:
        forked.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(trials, "_in_fresh_process", counted)
    empty = tmp_path / "empty"
    empty.mkdir()
    argv = [*_infer(tmp_path / "p", "--repeat", "2"), str(empty)]
    isolated = invoke(argv)
    assert forked == [1]  # it failed in the first trial's own process
    here = invoke([*argv, "--repeat-in-process"])
    assert (
        (isolated.status, isolated.stderr)
        == (here.status, here.stderr)
        == (
            2,
            f"no images found at: {empty} (accepted suffixes: .bmp .jpeg .jpg .png .tif .tiff "
            ".webp)\n",
        )
    )
    assert not (tmp_path / "p").exists() and not _trial_children()


def _cfg(project: Path) -> object:
    return configured(
        "infer",
        {
            "model.weights": CHECKPOINT,
            "device.name": "cpu",
            "imgsz": 64,
            "window.warmup": 0,
            "window.runs": 2,
            "window.repeat": 2,
            "trace": False,
            "project": str(project),
        },
    )


def _measure_with(project: Path, on_progress: Callable[[str, int, int], None]) -> None:
    measure_config(_cfg(project), [], on_progress, notice=lambda label, text: None)  # type: ignore[arg-type]


def test_a_trial_killed_outright_fails_the_run_with_its_reason(tmp_path: Path) -> None:
    def kill_the_trial(stage: str, done: int, total: int) -> None:
        for child in _trial_children():
            os.kill(child.pid or 0, signal.SIGKILL)

    with pytest.raises(TrialCrashedError) as failed:
        _measure_with(tmp_path, kill_the_trial)
    assert failed.value.message == (
        "trial 1 of 2: its process exited -9 (signal SIGKILL) before it finished"
    )
    assert failed.value.hint is not None and "OOM killer" in failed.value.hint
    assert failed.value.status == 3
    assert not (tmp_path / "infer").exists() and list(tmp_path.iterdir()) == []


def test_a_stop_here_stops_the_trials_process_and_leaves_no_staging(tmp_path: Path) -> None:
    seen: list[int] = []

    def stop(stage: str, done: int, total: int) -> None:
        seen.extend(child.pid or 0 for child in _trial_children())
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _measure_with(tmp_path, stop)
    assert seen and not _trial_children()
    assert list(tmp_path.iterdir()) == []


def test_a_crash_in_the_trial_names_its_last_line() -> None:
    crash = "Traceback (most recent call last):\n  File x\nRuntimeError: kaput\n"
    with pytest.raises(TrialCrashedError) as failed:
        trials._outcome(("crash", crash), 0, 2, 3)
    assert failed.value.message == "trial 2 of 3 crashed in its process: RuntimeError: kaput"
    assert failed.value.hint == trials.CRASH_HINT


_SESSION_FIELDS = 4  # state, ppid, pgrp, session: the fields after the command name


def _session(sid: int) -> list[int]:
    """The live processes of session `sid` (a zombie is dead)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()[:_SESSION_FIELDS]
                if int(fields[3]) == sid and fields[0] != "Z":
                    found.append(int(entry.name))
    return found


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_trial_ends_when_its_parent_is_killed_outright(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "libreyolo", *_infer(tmp_path, "--repeat", "2")]
    argv[argv.index("--runs") + 1] = "400"  # long enough to be killed mid-trial
    parent = subprocess.Popen(
        argv, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        # the parent, the fork server and the trial: then the trial is measuring
        while len(_session(parent.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(_session(parent.pid)) >= 3, parent.poll()
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 30
        while _session(parent.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _session(parent.pid), "a trial's process outlived its killed parent"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()
        if parent.stderr is not None:
            parent.stderr.close()
