"""One definition of the peak: a standalone `profile run` and a sweep point (measured in a
child forked from the sweep's server, which loaded torch before it) report the same
`peak_rss_mb` for the same settings, so a memory budget read from one holds for the other.
Before the shared library pages were left out of the peak, the forked point counted about
280 MB less (only the pages it touched itself) at YOLOv9-t 320 px.

Both processes run with glibc's mmap threshold fixed (`MALLOC_MMAP_THRESHOLD_`). Left dynamic,
glibc raises it as large blocks are freed, so how much freed memory a process keeps depends on
its allocation history: unpinned, one standalone run's peak read 651 to 670 MB over four runs
and a sweep point's 628 to 647 MB (a CI run failed on 670 against 628, 6.3 %). Pinned, each
side repeats within 1 MB and the two differ by the baseline's 5 MB. The allocator's noise is
the trainer's too (docs/profile-format.md says so); what this test holds is the definition."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sweep.helpers import CHECKPOINT

SETTINGS = {"batch": "4", "imgsz": "160", "steps": "2", "warmup": "1", "workers": "0"}
TOLERANCE = 0.05  # issue 45: the same peak within 5 %
# glibc's default initial threshold (128 KiB), kept from moving with the process's history
STEADY_ALLOCATOR = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(128 * 1024)}


def _standalone(project: Path) -> dict[str, object]:
    argv = [sys.executable, "-m", "libreyolo", "profile", "run", "synthetic", "--device", "cpu"]
    argv += ["--weights", str(CHECKPOINT), "--project", str(project)]
    for name, value in SETTINGS.items():
        argv += [f"--{name}", value]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=STEADY_ALLOCATOR)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((project / "run" / "profile.json").read_text(encoding="utf-8"))


def _sweep_point(sweep_dir: Path) -> dict[str, object]:
    argv = [sys.executable, "-m", "libreyolo.sweep", "-m", "mode=run", "device=cpu"]
    argv += [f"model.weights={CHECKPOINT}", f"hydra.sweep.dir={sweep_dir}"]
    argv += [f"sweep.lock_dir={sweep_dir / 'locks'}", "sweep.isolate=true"]
    argv += [f"batch={SETTINGS['batch']}", f"imgsz={SETTINGS['imgsz']}"]
    argv += [f"window.steps={SETTINGS['steps']}", f"window.warmup={SETTINGS['warmup']}"]
    argv += [f"dataset.workers={SETTINGS['workers']}"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=STEADY_ALLOCATOR)
    assert done.returncode == 0, done.stderr[-2000:]
    (path,) = sweep_dir.glob("*/run/profile.json")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_a_sweep_point_and_a_standalone_run_report_the_same_peak(tmp_path: Path) -> None:
    alone = _standalone(tmp_path / "alone")
    point = _sweep_point(tmp_path / "sweep")
    peaks: list[float] = []
    for profile in (alone, point):
        metrics = profile["metrics"]
        assert isinstance(metrics, dict)
        peak, library = metrics["peak_rss_mb"], metrics["library_rss_mb"]
        assert isinstance(peak, float) and isinstance(library, float)
        peaks.append(peak)
    assert abs(peaks[1] - peaks[0]) <= TOLERANCE * peaks[0], peaks
