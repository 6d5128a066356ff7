"""A sweep folder's own files (`sweep.json`, `sweep_plan.json`, `tune.json`) are read only inside
it: one that is a link leading outside would put another folder's record in this sweep's place,
so every reader (and the regression gate) refuses it in one line, exit 1, before reading
anything; a point whose profile path leads outside is not compared, and the gate fails (4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from libreyolo.document.sweep_io import TUNE_FILE
from libreyolo.errors import AnalysisError
from libreyolo.sweep.report import write_report
from tests.cli.test_compare_sweeps import _point, _record
from tests.conftest import invoke
from tests.sweep.test_report import make_point
from tests.tune_records import knee_record, write_tune_sweep

B1 = [100.0, 101.0, 99.0]
B2 = [200.0, 202.0, 198.0]


def _refusal(path: Path) -> str:
    return (
        f"failed to read {path}: it is a link to no file inside the sweep folder (replace the "
        "link with the file itself)\n"
    )


def _one_point_before_two_after(tmp_path: Path) -> tuple[Path, Path]:
    """Before measured batch 1; after batch 1 and 2: the gate fails on its own files (batch 2
    is only in after)."""
    before, after = tmp_path / "before", tmp_path / "after"
    _point(before, 1, B1)
    _point(after, 1, B1)
    _point(after, 2, B2)
    argv = ["profile", "compare", str(before), str(after), "--fail-on-regression", "5"]
    assert invoke(argv).status == 4
    return before, after


@pytest.mark.parametrize("command", ["compare", "summary", "report"])
def test_a_sweep_json_linked_from_outside_is_never_read(tmp_path: Path, command: str) -> None:
    before, after = _one_point_before_two_after(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    _point(elsewhere, 1, B1)  # a sweep of batch 1 only: read, it hid batch 2 from the gate
    _record(elsewhere)
    (after / "sweep.json").symlink_to(elsewhere / "sweep.json")
    argv = {
        "compare": ["compare", str(before), str(after), "--fail-on-regression", "5"],
        "summary": ["summary", str(after)],
        "report": ["report", str(after), "-o", str(tmp_path / "page.html")],
    }[command]
    result = invoke(["profile", *argv])
    assert (result.status, result.stdout) == (1, "")
    assert result.stderr == _refusal(after.resolve() / "sweep.json")
    assert not (tmp_path / "page.html").exists()


def test_a_plan_linked_from_outside_is_never_read(tmp_path: Path) -> None:
    before, after = _one_point_before_two_after(tmp_path)
    plan = {"schema": "libreyolo.sweep-plan/v1", "points": {"b1_s64_amp1": ["batch=1"]}}
    outside = tmp_path / "plan.json"
    outside.write_text(json.dumps(plan), encoding="utf-8")
    (after / "sweep_plan.json").symlink_to(outside)
    result = invoke(["profile", "compare", str(before), str(after), "--fail-on-regression", "5"])
    assert (result.status, result.stdout) == (1, "")
    assert result.stderr == _refusal(after.resolve() / "sweep_plan.json")


def test_a_tune_record_linked_from_outside_is_never_read(tmp_path: Path) -> None:
    root = write_tune_sweep(tmp_path / "sweep", knee_record())
    outside = tmp_path / "tune.json"
    (root / TUNE_FILE).rename(outside)
    (root / TUNE_FILE).symlink_to(outside)
    result = invoke(["profile", "summary", str(root)])
    assert (result.status, result.stdout) == (1, "")
    assert result.stderr == _refusal(root.resolve() / TUNE_FILE)


def test_a_link_that_stays_inside_the_folder_is_read(tmp_path: Path) -> None:
    root = tmp_path / "sweep"
    make_point(root, 1, 64, 50.0)
    _record(root)
    (root / "sweep.json").rename(root / "record.json")
    (root / "sweep.json").symlink_to("record.json")
    result = invoke(["profile", "summary", str(root)])
    assert result.status == 0, result.stderr
    assert result.stdout.splitlines()[1].split()[:3] == ["b1_s64_amp1", "ok", "50.0"]


@pytest.mark.parametrize("kind", ["dotdot", "symlink"])
def test_a_point_whose_profile_leads_outside_fails_the_gate(tmp_path: Path, kind: str) -> None:
    """The profile path in `sweep.json` leads out (through `..`, or a link inside the point
    folder): never read, the point is not compared, and so the gate fails."""
    before, after = tmp_path / "before", tmp_path / "after"
    for root in (before, after):
        _point(root, 1, B1)
    elsewhere = tmp_path / "elsewhere.json"
    profile = after / "b1_s64_amp1" / "infer" / "profile_repeat.json"
    elsewhere.write_bytes(profile.read_bytes())
    _record(after)
    record = json.loads((after / "sweep.json").read_text(encoding="utf-8"))
    if kind == "dotdot":
        recorded = "b1_s64_amp1/../../elsewhere.json"
    else:
        (after / "b1_s64_amp1" / "infer" / "link.json").symlink_to(elsewhere)
        recorded = "b1_s64_amp1/infer/link.json"
    record["points"]["b1_s64_amp1"]["profile"] = recorded
    (after / "sweep.json").write_text(json.dumps(record), encoding="utf-8")
    result = invoke(["profile", "compare", str(before), str(after), "--fail-on-regression", "5"])
    assert result.status == 4
    assert result.stderr == (
        "regression: not compared: b1_s64_amp1 (after profile lost: profile not found inside "
        f"the sweep folder: {recorded})\n"
    )


def test_the_sweeps_own_report_and_log_refuse_a_linked_plan(tmp_path: Path) -> None:
    """`python -m libreyolo.sweep.report` (and the sweep's end) and `profile log` read the plan
    too: a link out is refused there as well, nothing written."""
    root = tmp_path / "sweep"
    make_point(root, 1, 64, 50.0)
    plan = {"schema": "libreyolo.sweep-plan/v1", "points": {"b1_s64_amp1": []}}
    outside = tmp_path / "plan.json"
    outside.write_text(json.dumps(plan), encoding="utf-8")
    (root / "sweep_plan.json").symlink_to(outside)
    with pytest.raises(AnalysisError) as refused:
        write_report(root)
    linked = root.resolve() / "sweep_plan.json"
    assert refused.value.message == (
        f"failed to read {linked}: it is a link to no file inside the sweep folder"
    )
    assert not (root / "sweep.json").exists()
    result = invoke(["profile", "log", str(root), "--tensorboard", str(tmp_path / "tb")])
    assert (result.status, result.stderr) == (1, _refusal(linked))


def test_a_sweep_json_in_a_link_loop_is_one_line(tmp_path: Path) -> None:
    before, after = _one_point_before_two_after(tmp_path)
    (after / "sweep.json").symlink_to("sweep.json")  # resolving it never ends
    result = invoke(["profile", "compare", str(before), str(after), "--fail-on-regression", "5"])
    assert (result.status, result.stdout) == (1, "")
    assert result.stderr == _refusal(after.resolve() / "sweep.json")
