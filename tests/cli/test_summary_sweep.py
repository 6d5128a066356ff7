"""`libreyolo profile summary <sweep-dir>` and `compare` between two points of a real sweep."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import invoke
from tests.quiet import sweep_quietly
from tests.sweep.helpers import tiny_sweep_argv
from tests.sweep.test_report import RECORD_KEYS, make_sweep
from tests.test_architecture import _run_blocked

ROOT = Path(__file__).resolve().parents[2]
TABLE = [
    "point        status  img/s  MFU  VRAM MB  RSS MB  thrash  contended  verdict",
    "b4_s64_amp1  ok      120.0  12%  400.0    540.0   yes     no         compute",
    "b2_s64_amp1  ok      80.0   8%   200.0    520.0   no      no         compute",
    "b1_s64_amp1  ok      50.0   5%   100.0    510.0   no      no         compute",
    "b1_s96_amp1  ok      30.0   3%   100.0    510.0   no      no         compute",
    "b2_s96_amp1  failed  -      -    -        -       -       -          oom: boom",
    "recommended for imgsz 64: b2_s64_amp1",
    "recommended for imgsz 96: b1_s96_amp1",
    "1 of 5 points failed",
]


@pytest.fixture
def sweep_dir(tmp_path: Path) -> Path:
    from libreyolo.sweep.report import write_report

    write_report(make_sweep(tmp_path / "sweep"))
    return tmp_path / "sweep"


def test_summary_of_a_sweep_prints_the_table(sweep_dir: Path) -> None:
    result = invoke(["profile", "summary", str(sweep_dir)])
    assert result.status == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.splitlines() == TABLE


def test_summary_json_of_a_sweep_is_the_sweep_record(sweep_dir: Path) -> None:
    result = invoke(["profile", "summary", str(sweep_dir), "--json"])
    assert result.status == 0, result.stderr
    data = result.json()
    assert isinstance(data, dict)
    assert set(data) == RECORD_KEYS
    assert data == json.loads((sweep_dir / "sweep.json").read_text(encoding="utf-8"))


def test_summary_of_point_folders_without_sweep_json(sweep_dir: Path) -> None:
    (sweep_dir / "sweep.json").unlink()
    (sweep_dir / "sweep.png").unlink()
    result = invoke(["profile", "summary", str(sweep_dir), "--json"])
    assert result.status == 0, result.stderr
    data = result.json()
    assert isinstance(data, dict) and set(data) == RECORD_KEYS
    assert data["chart"] is None and data["num_failed"] == 1
    assert invoke(["profile", "summary", str(sweep_dir)]).stdout.splitlines() == TABLE
    assert not (sweep_dir / "sweep.json").exists()


def test_summary_of_a_missing_path_exits_2(tmp_path: Path) -> None:
    result = invoke(["profile", "summary", str(tmp_path / "nope")])
    assert result.status == 2
    assert result.stderr == f"not found: {tmp_path / 'nope'}\n"


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"points": []}', ""])
def test_summary_of_an_unreadable_sweep_json_exits_1_with_one_line(
    tmp_path: Path, content: str
) -> None:
    (tmp_path / "sweep.json").write_text(content, encoding="utf-8")
    result = invoke(["profile", "summary", str(tmp_path)])
    assert result.status == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"failed to read sweep {tmp_path.resolve() / 'sweep.json'}: ")


def test_summary_of_a_sweep_json_of_an_unknown_schema_exits_1(tmp_path: Path) -> None:
    record = {"schema": "libreyolo.sweep/v99", "points": {}}
    (tmp_path / "sweep.json").write_text(json.dumps(record), encoding="utf-8")
    result = invoke(["profile", "summary", str(tmp_path), "--json"])
    assert result.status == 1
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "cannot_analyse" and "libreyolo.sweep/v99" in error["message"]


@pytest.mark.parametrize("holds", [None, "profile.json"])
def test_a_directory_that_is_not_a_sweep_keeps_exit_2(tmp_path: Path, holds: str | None) -> None:
    if holds:
        (tmp_path / holds).write_text("{}", encoding="utf-8")
    result = invoke(["profile", "summary", str(tmp_path)])
    assert result.status == 2
    assert result.stderr.startswith(f"not a file: {tmp_path} is a directory")


def test_summary_of_a_sweep_runs_without_heavy_modules(sweep_dir: Path) -> None:
    for extra in ([], ["--json"]):
        proc = _run_blocked(["profile", "summary", str(sweep_dir), *extra])
        assert proc.returncode == 0, proc.stderr
        assert "b2_s64_amp1" in proc.stdout


# --- a real (tiny, in-process) sweep: compare works between two of its points ---


@pytest.fixture(scope="module")
def real_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sweep_dir = tmp_path_factory.mktemp("real_sweep")
    argv = tiny_sweep_argv(sweep_dir, "batch=1,2", "imgsz=64")
    done = sweep_quietly(  # a contended point is never recommended: measure on a quiet host
        lambda: subprocess.run(
            argv, capture_output=True, text=True, cwd=ROOT, timeout=300, check=False
        ),
        sweep_dir,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return sweep_dir


def _profiles(sweep_dir: Path) -> tuple[str, str]:
    points = json.loads((sweep_dir / "sweep.json").read_text(encoding="utf-8"))["points"]
    return points["b1_s64_amp1"]["profile"], points["b2_s64_amp1"]["profile"]


def test_summary_of_a_real_sweep(real_sweep: Path) -> None:
    result = invoke(["profile", "summary", str(real_sweep), "--json"])
    assert result.status == 0, result.stderr
    data = result.json()
    assert isinstance(data, dict)
    assert set(data["points"]) == {"b1_s64_amp1", "b2_s64_amp1"}
    assert data["num_failed"] == 0 and set(data["recommended"]) == {"64"}
    lines = invoke(["profile", "summary", str(real_sweep)]).stdout.splitlines()
    assert lines[-2:] == [
        f"recommended for imgsz 64: {data['recommended']['64']}",
        "all 2 points ok",
    ]


def test_compare_between_two_points_of_a_real_sweep(real_sweep: Path) -> None:
    before, after = _profiles(real_sweep)
    assert Path(before).is_relative_to(real_sweep / "b1_s64_amp1")
    text = invoke(["profile", "compare", before, after])
    assert text.status == 0, text.stderr
    assert text.stdout.startswith("img/s ")
    assert "warning: the profiles differ in batch: 1 vs 2" in text.stdout
    result = invoke(["profile", "compare", before, after, "--json"])
    assert result.status == 0, result.stderr
    data = result.json()
    assert isinstance(data, dict)
    assert (data["before"], data["after"]) == (before, after)
    assert data["img_per_s"]["before"] > 0 and data["img_per_s"]["after"] > 0
    assert _run_blocked(["profile", "compare", before, after]).returncode == 0
