"""Ctrl-C in the middle of a tune search: the point in flight stops, tune.json records what was
measured with the unfinished series `interrupted`, and the sweep exits 130 in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from libreyolo.sweep.tune_write import INTERRUPTED_WHY
from tests.sweep.helpers import tune_argv
from tests.sweep.test_interrupt import _no_process_left, _wait_for

LAST_LINE = "interrupted: 1 of 2 points done; run the same command again to resume"


def test_a_stopped_search_writes_what_it_measured_and_stops(tmp_path: Path) -> None:
    # Two series measured in one round: one quick, then one that runs for minutes unless stopped.
    argv = [a for a in tune_argv(tmp_path, "tune.goal=maxfit") if a != "window.runs=2"]
    argv.append("window.runs=2,5000")
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    slow = "b1_s64_amp1_runs-5000"
    try:
        _wait_for(tmp_path / slow / "point.json")
        time.sleep(1.5)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == LAST_LINE and "Traceback" not in err
    assert _no_process_left(proc.pid)
    record = json.loads((tmp_path / "tune.json").read_text(encoding="utf-8"))
    quick, stopped = record["series"]
    assert (quick["overrides"], stopped["overrides"]) == (["window.runs=2"], ["window.runs=5000"])
    # The quick point finished in the round the stop cut short: it is on the path.
    assert [(s["point"], s["fits"]) for s in quick["path"]] == [("b1_s64_amp1_runs-2", True)]
    assert stopped["path"] == []
    for series in (quick, stopped):
        assert (series["stopped"], series["why"], series["batch"]) == (
            "interrupted",
            INTERRUPTED_WHY,
            None,
        )
    assert (record["recommended"], record["num_points"]) == ([], 1)
    status = json.loads((tmp_path / slow / "status.json").read_text(encoding="utf-8"))
    assert (status["status"], status["reason"]) == ("interrupted", "stopped by SIGINT")
    assert out.splitlines()[-2] == "1 of 2 points ok, 1 interrupted"
    answer = f": no recommendation: {INTERRUPTED_WHY} (stopped: interrupted)\n"
    assert out.count(answer) == 2
