"""Sweep files point only inside their own sweep folder: a profile path or planned point that
leads elsewhere makes that point failed, and nothing outside is read."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from libreyolo.document.convert import to_plain
from libreyolo.document.sweep_files import PLAN_SCHEMA, collect_sweep, point_entry
from tests.conftest import invoke
from tests.sweep.test_report import make_point

SECRET = {"metrics": {"img_per_s": 999.0, "bound": "secret"}, "verdict": {"bound": "secret"}}


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    """A sweep folder inside `tmp_path`, and a readable profile-shaped file outside it."""
    (tmp_path / "outside.json").write_text(json.dumps(SECRET), encoding="utf-8")
    root = tmp_path / "sweep"
    make_point(root, 1, 64, 50.0)
    make_point(root, 2, 64, 80.0)
    return root


def _point_to(root: Path, profile: str) -> None:
    status_path = root / "b2_s64_amp1" / "status.json"
    status = json.loads(status_path.read_text(encoding="utf-8"))
    status_path.write_text(json.dumps(status | {"profile": profile}), encoding="utf-8")


def _outside_profiles(root: Path) -> dict[str, str]:
    link = root / "b2_s64_amp1" / "infer" / "link.json"
    link.symlink_to(root.parent / "outside.json")
    return {
        "dotdot": "../../outside.json",
        "absolute": str(root.parent / "outside.json"),
        "symlink": "infer/link.json",
    }


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_a_profile_path_leading_outside_fails_that_point_only(sweep: Path, kind: str) -> None:
    _point_to(sweep, _outside_profiles(sweep)[kind])
    entry = to_plain(point_entry(sweep / "b2_s64_amp1", sweep))
    assert isinstance(entry, dict)
    assert (entry["status"], entry["code"]) == ("failed", "outside")
    assert entry["reason"] == "profile path outside the sweep folder"
    assert entry["metrics"] == {} and entry["profile"] is None

    result = invoke(["profile", "summary", str(sweep)])
    assert result.status == 0, result.stderr
    assert "secret" not in result.stdout and "999" not in result.stdout
    lines = result.stdout.splitlines()
    assert lines[1].split()[:3] == ["b1_s64_amp1", "ok", "50.0"]  # the rest stays useful
    assert lines[2].endswith("outside: profile path outside the sweep folder")
    assert lines[-1] == "1 of 2 points failed"


def test_a_profile_path_that_stays_inside_is_read(sweep: Path) -> None:
    _point_to(sweep, "infer/../infer/profile.json")
    assert point_entry(sweep / "b2_s64_amp1", sweep).metrics.img_per_s == 80.0


def test_a_status_json_linked_from_outside_is_not_read(sweep: Path, tmp_path: Path) -> None:
    status_path = sweep / "b2_s64_amp1" / "status.json"
    status_path.unlink()
    status_path.symlink_to(tmp_path / "outside.json")
    entry = point_entry(sweep / "b2_s64_amp1", sweep)
    assert (entry.status, entry.reason) == ("failed", "status.json outside the sweep folder")


@pytest.mark.parametrize("name", ["../outside", "/etc", "linked"])
def test_a_planned_point_outside_the_sweep_folder_is_not_read(sweep: Path, name: str) -> None:
    (sweep / "linked").symlink_to(sweep.parent)
    plan = {"schema": PLAN_SCHEMA, "points": {"b1_s64_amp1": [], name: []}}
    (sweep / "sweep_plan.json").write_text(json.dumps(plan), encoding="utf-8")
    points = collect_sweep(sweep)
    assert list(points) == ["b1_s64_amp1", name]
    assert points["b1_s64_amp1"].status == "ok"
    assert (points[name].status, points[name].code) == ("failed", "outside")
    assert points[name].reason == "point folder outside the sweep folder"


def _hung(signum: int, frame: object) -> None:
    raise TimeoutError("blocked on the FIFO")


def test_a_fifo_in_a_point_folder_is_not_opened(sweep: Path) -> None:
    status_path = sweep / "b2_s64_amp1" / "status.json"
    status_path.unlink()
    os.mkfifo(status_path)  # opening it would block until a writer comes
    previous = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(5)
    try:
        entry = point_entry(sweep / "b2_s64_amp1", sweep)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert (entry.status, entry.code) == ("failed", "crashed")
