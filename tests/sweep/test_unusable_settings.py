"""Sweep settings no point can measure with are refused before the first point, in one line
(exit 2, no traceback, nothing measured); swept per point, that point fails with the reason."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from libreyolo.document.convert import to_plain
from libreyolo.errors import UsageError
from libreyolo.sweep.lease import device_lease
from libreyolo.sweep.point import run_point
from tests.sweep.test_resume import _cfg


def _sweep(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "libreyolo.sweep", "-m", "mode=infer", "device=cpu"]
    argv += ["window.warmup=0", "window.runs=2", "trace=false", "imgsz=64", *overrides]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(
    ("settings", "line"),
    [
        (
            ["sweep.lock_dir={file}/locks"],
            "cannot use the lock folder {file}/locks: Not a directory (set sweep.lock_dir to a "
            "folder every measuring process can write)",
        ),
        (
            ["hydra.sweep.dir={file}"],
            "hydra.sweep.dir {file} is not a folder (choose another path)",
        ),
        (
            ["hydra.sweep.dir={file}/sweep"],
            "cannot create hydra.sweep.dir {file}/sweep: Not a directory (choose another path)",
        ),
        (
            ["device.name=../../escaped"],
            "device.name '../../escaped' is not a device (use cpu, a CUDA index or cuda:N)",
        ),
        (
            ["sweep.lease_timeout_s=nan"],
            "sweep.lease_timeout_s must be a finite number of seconds, 0 or more; got nan",
        ),
    ],
)
def test_an_unusable_sweep_setting_is_one_line_before_any_point(
    tmp_path: Path, settings: list[str], line: str
) -> None:
    file = tmp_path / "afile"
    file.write_text("not a folder", encoding="utf-8")
    defaults = [f"hydra.sweep.dir={tmp_path / 'sweep'}", f"sweep.lock_dir={tmp_path / 'locks'}"]
    given = [s.format(file=file) for s in settings]
    keys = {s.split("=", 1)[0] for s in given}
    proc = _sweep(tmp_path, *[d for d in defaults if d.split("=", 1)[0] not in keys], *given)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == line.format(file=file) + "\n" and proc.stdout == ""
    assert not (tmp_path / "sweep").exists() and not (tmp_path.parent / "escaped.lock").exists()
    assert file.read_text(encoding="utf-8") == "not a folder"


@pytest.mark.parametrize("timeout_s", [math.nan, math.inf, -1.0])
def test_the_lease_refuses_a_timeout_that_is_not_seconds(tmp_path: Path, timeout_s: float) -> None:
    with (
        pytest.raises(UsageError, match=r"sweep\.lease_timeout_s must be a finite number"),
        device_lease("cpu", lock_dir=tmp_path, timeout_s=timeout_s),
    ):
        pass


def test_a_device_name_never_names_a_lock_file_outside_the_lock_folder(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    with (
        pytest.raises(UsageError, match="is not a device"),
        device_lease("../outside", lock_dir=locks),
    ):
        pass
    assert list(tmp_path.rglob("*.lock")) == []


def test_a_point_whose_lock_folder_cannot_be_used_fails_with_the_reason(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x", encoding="utf-8")
    cfg = _cfg(tmp_path)
    cfg["sweep"] |= {"lock_dir": str(blocker / "locks")}
    folder = tmp_path / "b1_s64_amp1"
    record = to_plain(run_point(cfg, folder, isolate=False, overrides=["batch=1"]))
    assert isinstance(record, dict)
    assert record["status"] == "failed" and record["code"] == "usage"
    assert record["reason"] == (
        f"cannot use the lock folder {blocker}/locks: Not a directory (set sweep.lock_dir to a "
        "folder every measuring process can write)"
    )
    assert json.loads((folder / "status.json").read_text(encoding="utf-8")) == record
