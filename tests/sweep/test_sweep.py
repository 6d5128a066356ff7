"""`libreyolo-sweep` end to end on CPU: point folders, `sweep.json`, failures, isolation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from libreyolo.document.convert import to_plain
from libreyolo.document.sweep_model import HeadlineMetrics, PointRequest, SweepRecord, SweepRow
from libreyolo.sweep.report import recommend, render_table
from tests.quiet import sweep_quietly
from tests.sweep.helpers import tiny_sweep_argv


def _sweep(
    sweep_dir: Path, *overrides: str, isolate: bool = False
) -> subprocess.CompletedProcess[str]:
    argv = tiny_sweep_argv(sweep_dir, *overrides, isolate=isolate)
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


def _load(sweep_dir: Path) -> dict[str, Any]:
    return json.loads((sweep_dir / "sweep.json").read_text(encoding="utf-8"))


def test_grid_writes_one_folder_per_point_and_a_recommendation(tmp_path: Path) -> None:
    done = sweep_quietly(lambda: _sweep(tmp_path, "batch=1,2", "imgsz=64,96"), tmp_path)
    assert done.returncode == 0, done.stderr
    data = _load(tmp_path)
    names = {"b1_s64_amp1", "b1_s96_amp1", "b2_s64_amp1", "b2_s96_amp1"}
    assert set(data["points"]) == names
    for name, point in data["points"].items():
        assert point["status"] == "ok"
        assert Path(point["profile"]).is_file()
        assert Path(point["profile"]).is_relative_to(tmp_path / name)
        assert point["metrics"]["img_per_s"] > 0
        assert f"batch={point['batch']}" in point["overrides"]
        profile = json.loads(Path(point["profile"]).read_text(encoding="utf-8"))
        assert profile["run"]["config"]["imgsz"] == point["imgsz"]
        assert profile["run"]["overrides"] == point["overrides"]
        request = json.loads((tmp_path / name / "point.json").read_text(encoding="utf-8"))
        assert request["config"]["batch"] == point["batch"]
    assert data["num_failed"] == 0
    assert set(data["recommended"]) == {"64", "96"}
    assert data["recommended"]["64"].endswith("_s64_amp1")
    assert "recommended for imgsz 64" in done.stdout
    assert "all 4 points ok" in done.stdout
    assert data["chart"] == "sweep.png"  # matplotlib comes with the dev extra
    assert (tmp_path / "sweep.png").read_bytes().startswith(b"\x89PNG")


def test_a_warning_every_point_repeats_is_shown_once(tmp_path: Path) -> None:
    env = dict(os.environ, LIBREYOLO_WEIGHTS_DIR=str(tmp_path / "weights"))
    env["LIBREYOLO_WEIGHTS_URL"] = "http://127.0.0.1:9/{name}"  # refused at once: random weights
    argv = tiny_sweep_argv(tmp_path, "batch=1,2", "imgsz=64", isolate=True)
    argv.append("model.weights=LibreYOLO9t.pt")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=env)
    assert done.returncode == 0, done.stderr
    for name in ("b1_s64_amp1", "b2_s64_amp1"):  # each point's log keeps it
        assert "WEIGHTS NOT AVAILABLE" in (tmp_path / name / "point.log").read_text("utf-8")
    assert done.stderr.count("WEIGHTS NOT AVAILABLE") == 1, done.stderr


def test_a_failing_point_is_recorded_and_the_others_still_run(tmp_path: Path) -> None:
    done = sweep_quietly(lambda: _sweep(tmp_path, "batch=-5,1", "imgsz=64"), tmp_path)
    assert done.returncode == 1
    data = _load(tmp_path)
    bad, good = data["points"]["b-5_s64_amp1"], data["points"]["b1_s64_amp1"]
    assert bad["status"] == "failed"
    assert "batch" in bad["reason"] and bad["code"] == "usage"
    assert good["status"] == "ok"
    assert data["num_failed"] == 1
    assert data["recommended"] == {"64": "b1_s64_amp1"}
    assert "1 of 2 points failed" in done.stdout
    status = json.loads((tmp_path / "b-5_s64_amp1" / "status.json").read_text("utf-8"))
    assert status["status"] == "failed" and "batch=-5" in status["overrides"]


def test_an_isolated_point_measures_in_a_child_process(tmp_path: Path) -> None:
    done = _sweep(tmp_path, "batch=1", "imgsz=64", "amp=false", isolate=True)
    assert done.returncode == 0, done.stderr
    point = _load(tmp_path)["points"]["b1_s64_amp0"]
    assert point["status"] == "ok" and Path(point["profile"]).is_file()
    status = json.loads((tmp_path / "b1_s64_amp0" / "status.json").read_text("utf-8"))
    assert status["held_device"] == "cpu"
    assert isinstance(status["pid"], int) and status["pid"] != os.getpid()
    assert 0 <= status["lease_wait_s"] < 5
    assert status["lease_acquired_at"] < status["lease_released_at"]
    # The measuring child ran inside the lease; the point also spent time starting it.
    held = status["lease_released_at"] - status["lease_acquired_at"]
    assert 0 < status["measure_s"] < held <= status["point_s"] + 0.01
    # The windows (warmup + measured runs) are part of measure_s; model build and saving are not.
    assert 0 < status["window_s"] < status["measure_s"]
    profile = json.loads(Path(point["profile"]).read_text(encoding="utf-8"))
    assert profile["run"]["held_device"] == "cpu"

    # Re-running the point from its stored request reproduces its settings exactly.
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "libreyolo.sweep.point",
            str(tmp_path / "b1_s64_amp0" / "point.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    rerun = json.loads(Path(point["profile"]).read_text(encoding="utf-8"))
    assert rerun["created"] != profile["created"] or rerun["samples"] != profile["samples"]
    assert rerun["run"]["config"] == profile["run"]["config"]
    assert rerun["run"]["overrides"] == profile["run"]["overrides"]
    for key in ("batch", "imgsz", "amp", "device", "model"):
        assert rerun["run"][key] == profile["run"][key]


@pytest.mark.slow
def test_repeat_records_the_aggregate_profile(tmp_path: Path) -> None:
    done = _sweep(tmp_path, "batch=1", "imgsz=64", "window.repeat=3")
    assert done.returncode == 0, done.stderr
    status = json.loads((tmp_path / "b1_s64_amp1" / "status.json").read_text("utf-8"))
    assert status["status"] == "ok" and status["profile"] == "infer_repeat.json"
    assert status["pid"] != os.getpid() and status["measure_s"] > 0  # in-process: the sweep's pid
    assert 0 < status["window_s"] < status["measure_s"]
    point = _load(tmp_path)["points"]["b1_s64_amp1"]
    # status.json names the documented link; the record names the file it leads to, in the set
    assert Path(point["profile"]) == tmp_path / "b1_s64_amp1" / "infer" / "infer_repeat.json"
    aggregate = json.loads(Path(point["profile"]).read_text(encoding="utf-8"))
    assert len(aggregate["trials"]) == 3
    assert point["metrics"]["img_per_s"] > 0


def test_a_point_whose_lease_times_out_fails_with_the_reason(tmp_path: Path) -> None:
    from libreyolo.config.compose import as_plain_dict
    from libreyolo.config.schema import ProfileConfig
    from libreyolo.sweep.lease import device_lease
    from libreyolo.sweep.point import run_point

    cfg = as_plain_dict(ProfileConfig())
    cfg["device"] = {"name": "cpu"}
    cfg["sweep"] |= {"lock_dir": str(tmp_path / "locks"), "lease_timeout_s": 0.3}
    with device_lease("cpu", lock_dir=tmp_path / "locks"):  # another measurement holds the CPU
        record = to_plain(run_point(cfg, tmp_path / "p", isolate=False))
    assert isinstance(record, dict)
    assert (record["status"], record["code"]) == ("failed", "no_profile")
    assert "no lease on cpu within 0.3 s" in record["reason"]
    assert record["pid"] is None and record["held_device"] is None
    assert record["lease_wait_s"] >= 0.3 and record["point_s"] >= record["lease_wait_s"]
    saved = json.loads((tmp_path / "p" / "status.json").read_text("utf-8"))
    assert saved == record


def test_recommendation_skips_thrash_and_failures() -> None:
    def entry(status: str, imgsz: int, ips: float, thrash: bool = False) -> SweepRow:
        metrics = HeadlineMetrics(img_per_s=ips, memory_pressure=thrash, peak_vram_mb=10.0)
        return SweepRow(
            status=status,  # type: ignore[arg-type]
            imgsz=imgsz,
            metrics=metrics,
            verdict="compute",
            code=None if status == "ok" else "oom",
            reason="boom",
        )

    points = {
        "a": entry("ok", 640, 100.0),
        "b": entry("ok", 640, 300.0, thrash=True),
        "c": entry("failed", 640, 500.0),
        "d": entry("ok", 320, 50.0),
    }
    assert recommend(points) == {"320": "d", "640": "a"}
    data = SweepRecord(points=points, recommended=recommend(points), num_failed=1)
    lines = render_table(data).splitlines()
    assert [line.split()[0] for line in lines[1:5]] == ["b", "a", "d", "c"]
    assert "oom: boom" in lines[4]


def test_a_crashed_child_is_recorded_with_the_last_line_of_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from libreyolo.sweep import point as point_module
    from libreyolo.sweep.lease import device_lease

    # The child reads point.json back: garbage there makes it die with a traceback.
    monkeypatch.setattr(point_module, "_write", lambda path, data: path.write_text("{x"))
    with device_lease("cpu", lock_dir=tmp_path / "locks") as lease:
        request = PointRequest(config={})
        status = point_module._measure_leased(request, tmp_path / "point.json", lease, "cpu", True)
    record = to_plain(status)
    assert isinstance(record, dict)
    assert (record["status"], record["code"]) == ("failed", "crashed")
    assert record["reason"].startswith("child process exited 1: json.decoder.JSONDecodeError")
    assert isinstance(record["pid"], int) and record["pid"] != os.getpid()
    log = (tmp_path / "point.log").read_text(encoding="utf-8")
    assert "Traceback" in log and "JSONDecodeError" in log
