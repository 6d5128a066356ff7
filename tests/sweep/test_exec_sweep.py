"""A sweep over the execution mode: one folder, row and series per mode, a front across them,
and a compile that fails recorded as a failed point with its one-line reason."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.sweep.helpers import tiny_sweep_argv

# torch.compile with dynamo's eager backend: no inductor, seconds; the modes' minimum warmup.
CHEAP = ("imgsz=64", "window.warmup=3", "exec.compile_backend=eager")


def _sweep(sweep_dir: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    argv = tiny_sweep_argv(sweep_dir, *CHEAP, *overrides)
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


def test_exec_modes_sweep_into_rows_a_table_and_series_per_mode(tmp_path: Path) -> None:
    done = _sweep(tmp_path, "exec=eager,compile", "batch=1,4")
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))
    rows = record["points"]
    names = {f"b{b}_s64_amp1_exec-{m}" for b in (1, 4) for m in ("eager", "compile")}
    assert set(rows) == names
    assert all(Path(row["profile"]).is_file() for row in rows.values())
    for name, row in rows.items():
        mode = name.rsplit("-", 1)[1]
        assert (row["status"], row["exec"], row.get("export_s")) == ("ok", mode, None)
        assert (row.get("compile_s") is not None) == (mode == "compile")
    header = next(line for line in done.stdout.splitlines() if line.startswith("point "))
    assert header.split()[:5] == ["point", "status", "exec", "compile", "s"]
    page = (tmp_path / "sweep.html").read_text(encoding="utf-8")
    assert "compile · imgsz 64, amp on (no effect)" in page
    assert "eager · imgsz 64, amp on (no effect)" in page
    # the trade-off caption names the front, drawn over the points of both modes
    caption = page.split("the points no other point beats on both latency and img/s (", 1)[1]
    front = caption.split(")", 1)[0].split(", ")
    assert front and all(n.split("_exec-")[0] in {"b1_s64_amp1", "b4_s64_amp1"} for n in front)


def test_a_compile_that_fails_is_a_failed_point_with_one_line(tmp_path: Path) -> None:
    done = _sweep(tmp_path, "exec=compile", "exec.compile_backend=no_such_backend")
    row = json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))["points"]["b1_s64_amp1"]
    assert (row["status"], row["code"]) == ("failed", "stage_failed")
    assert row["reason"].startswith("stage 'torch.compile' failed: InvalidBackend: Invalid backend")
    assert "\n" not in row["reason"] and "Traceback" not in done.stdout + done.stderr
