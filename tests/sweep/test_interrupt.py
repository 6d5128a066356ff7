"""Stopping a sweep: Ctrl-C or SIGTERM stops the point in flight, records it, starts no other,
writes the report, exits 128 + the signal with one line, and leaves no process behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import ProfileConfig
from libreyolo.document.sweep_files import collect_sweep
from libreyolo.sweep import point as point_module
from libreyolo.sweep.point import run_point
from libreyolo.sweep.stop import Stopped
from tests.sweep.helpers import tiny_sweep_argv

# Three points; the middle one measures for minutes unless stopped.
GRID = ("imgsz=64", "window.runs=2,5000,2", "hydra.sweep.subdir=p${hydra.job.num}_r${window.runs}")
LAST_LINE = "interrupted: 1 of 3 points done; run the same command again to resume"


def _wait_for(path: Path, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


def _session(sid: int) -> list[str]:
    """The processes left in session `sid` (the sweep's own, started with a new session)."""
    left = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except (OSError, ValueError):
            continue
        if entry.isdigit() and int(stat.rsplit(")", 1)[1].split()[3]) == sid:
            left.append(entry)
    return left


def _no_process_left(sid: int, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while _session(sid):  # the fork server goes once the launcher's pipe to it closes
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@pytest.mark.slow
@pytest.mark.parametrize(
    ("to_group", "signum", "isolate"),
    [
        (True, signal.SIGINT, True),  # Ctrl-C in a terminal: the whole process group
        (False, signal.SIGINT, True),  # the launcher alone: its child must not run on
        (False, signal.SIGTERM, False),  # in-process point
    ],
)
def test_a_signal_stops_the_sweep_and_records_what_finished(
    tmp_path: Path, to_group: bool, signum: signal.Signals, isolate: bool
) -> None:
    argv = tiny_sweep_argv(tmp_path, *GRID, isolate=isolate)
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        # The slow point has started (its child writes point.log first thing).
        _wait_for(tmp_path / "p1_r5000" / ("point.log" if isolate else "point.json"))
        time.sleep(1.5)
        (os.killpg if to_group else os.kill)(proc.pid, signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 128 + signum, err
    assert err.splitlines()[-1] == LAST_LINE
    assert "Traceback" not in err
    assert _no_process_left(proc.pid)
    data = json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))
    points = data["points"]
    assert list(points) == ["p0_r2", "p1_r5000", "p2_r2"]  # the whole grid, in launch order
    assert [p["status"] for p in points.values()] == ["ok", "interrupted", "missing"]
    assert points["p1_r5000"]["reason"] == f"stopped by {signum.name}"
    assert (data["num_points"], data["num_ok"], data["num_interrupted"]) == (3, 1, 1)
    assert data["num_missing"] == 1 and data["num_failed"] == 0
    status = json.loads((tmp_path / "p1_r5000" / "status.json").read_text(encoding="utf-8"))
    assert (status["status"], status["code"]) == ("interrupted", "interrupted")
    assert not (tmp_path / "p2_r2").exists()  # never started
    assert out.splitlines()[-2] == "1 of 3 points ok, 1 interrupted, 1 missing"


def _cfg(tmp_path: Path) -> dict[str, Any]:
    cfg = as_plain_dict(ProfileConfig())
    cfg["device"] = {"name": "cpu"}
    cfg["sweep"] |= {"lock_dir": str(tmp_path / "locks")}
    return cfg


def test_an_interrupted_in_process_point_is_recorded_and_the_interrupt_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def stopped(request_path: Path) -> dict[str, Any]:
        raise Stopped(signal.SIGTERM)

    monkeypatch.setattr(point_module, "measure_request", stopped)
    with pytest.raises(Stopped):
        run_point(_cfg(tmp_path), tmp_path / "p", isolate=False)
    status = json.loads((tmp_path / "p" / "status.json").read_text(encoding="utf-8"))
    assert (status["status"], status["code"]) == ("interrupted", "interrupted")
    assert status["reason"] == "stopped by SIGTERM"
    assert status["point_s"] >= 0


def test_a_point_that_finished_as_the_signal_came_keeps_its_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def finished_then_stopped(request_path: Path) -> dict[str, Any]:
        ok = {"status": "ok", "reason": "", "code": "", "profile": "infer/profile.json"}
        (request_path.parent / "status.json").write_text(json.dumps(ok), encoding="utf-8")
        raise KeyboardInterrupt

    monkeypatch.setattr(point_module, "measure_request", finished_then_stopped)
    with pytest.raises(KeyboardInterrupt):
        run_point(_cfg(tmp_path), tmp_path / "p", isolate=False)
    status = json.loads((tmp_path / "p" / "status.json").read_text(encoding="utf-8"))
    assert status["status"] == "ok"


@pytest.mark.slow
def test_a_sweep_killed_outright_leaves_no_point_measuring(tmp_path: Path) -> None:
    argv = tiny_sweep_argv(tmp_path, *GRID, isolate=True)
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        _wait_for(tmp_path / "p1_r5000" / "point.log")
        time.sleep(1.5)
        os.kill(proc.pid, signal.SIGKILL)  # nothing of the sweep's own runs any more
        proc.wait(timeout=10)
        assert _no_process_left(proc.pid)  # the child noticed and stopped; the fork server went
    finally:
        if _session(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
    assert not (tmp_path / "p1_r5000" / "status.json").exists()
    assert "Traceback" not in (tmp_path / "p1_r5000" / "point.log").read_text(encoding="utf-8")
    data = collect_sweep(tmp_path.resolve())  # what summary shows: the plan knows the grid
    assert [p.status for p in data.values()] == ["ok", "failed", "missing"]
    assert data["p1_r5000"].code == "crashed"


@pytest.mark.parametrize("dated", [False, True])
def test_the_stop_line_says_how_to_resume(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    dated: bool,
) -> None:
    from libreyolo.sweep import app
    from tests.sweep.test_report import make_point

    root = tmp_path / "sweep dir"
    make_point(root, 1, 64, 50.0)
    plan = {"schema": "libreyolo.sweep-plan/v1", "points": {"b1_s64_amp1": [], "b2_s64_amp1": []}}
    (root / "sweep_plan.json").write_text(json.dumps(plan), encoding="utf-8")

    def stopped_sweep() -> None:  # the multirun started into `root`, then SIGTERM came
        app._ROOTS.append(root.resolve())
        app._DATED.append(dated)
        raise Stopped(signal.SIGTERM)

    monkeypatch.setattr(app, "sweep_task", stopped_sweep)
    monkeypatch.setattr(sys, "argv", ["libreyolo-sweep", "-m"])
    with pytest.raises(SystemExit) as caught:
        app.main()
    assert caught.value.code == 143
    out, err = capsys.readouterr()
    assert out.splitlines()[-2:] == ["1 of 2 points ok, 1 missing", f"sweep: {root / 'sweep.json'}"]
    again = (
        f"add 'hydra.sweep.dir={root}' to the same command to resume"
        if dated
        else "run the same command again to resume"
    )
    assert err == f"interrupted: 1 of 2 points done; {again}\n"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored


def test_a_stop_before_the_first_point_says_nothing_was_measured(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from libreyolo.sweep import app

    def stopped_early() -> None:
        raise Stopped(signal.SIGINT)

    monkeypatch.setattr(app, "sweep_task", stopped_early)
    monkeypatch.setattr(sys, "argv", ["libreyolo-sweep", "-m"])
    with pytest.raises(SystemExit) as caught:
        app.main()
    assert caught.value.code == 130
    assert capsys.readouterr().err == "interrupted before the first point: nothing was measured\n"
