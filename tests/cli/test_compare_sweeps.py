"""`compare <sweep-a> <sweep-b>`: points matched by their axes, one row each, the gate applied to
every compared point (exit 4 when any fails)."""

from __future__ import annotations

import json
from pathlib import Path

from libreyolo.document.files import save
from libreyolo.document.model import Profile, RunInfo, Tool, Trial
from tests.conftest import invoke


def _point(root: Path, batch: int, img_per_s: list[float] | None) -> None:
    """A point folder as a sweep leaves it; None: a failed point (no profile)."""
    folder = root / f"b{batch}_s64_amp1"
    (folder / "infer").mkdir(parents=True)
    config = {"batch": batch, "imgsz": 64, "amp": True}
    request = {"config": config, "overrides": [f"batch={batch}"]}
    (folder / "point.json").write_text(json.dumps(request), encoding="utf-8")
    status: dict[str, object] = {"status": "failed", "reason": "boom", "code": "oom"}
    if img_per_s is not None:
        trials = [Trial(index=i, metrics={"img_per_s": v}) for i, v in enumerate(img_per_s)]
        profile = Profile(
            kind="train",
            created=None,
            tool=Tool(version="2.0.0"),
            run=RunInfo(mode="training", batch=batch, imgsz=64, amp=True),
            metrics={"img_per_s": sum(img_per_s) / len(img_per_s)},
            trials=trials if len(trials) > 1 else [],
        )
        save(profile, folder / "infer" / "profile_repeat.json")
        status = {"status": "ok", "reason": "", "code": "", "profile": "infer/profile_repeat.json"}
    (folder / "status.json").write_text(json.dumps(status), encoding="utf-8")


def _sweeps(tmp_path: Path, after_b2: list[float] | None) -> list[str]:
    a, b = tmp_path / "a", tmp_path / "b"
    _point(a, 1, [100.0, 101.0, 99.0])
    _point(a, 2, [200.0, 202.0, 198.0])
    _point(a, 4, None)
    _point(b, 1, [100.5, 101.5, 99.5])
    _point(b, 2, after_b2)
    _point(b, 8, [300.0, 301.0, 299.0])
    return [str(a), str(b)]


def test_sweeps_compare_point_by_point(tmp_path: Path) -> None:
    result = invoke(["profile", "compare", *_sweeps(tmp_path, [201.0, 203.0, 199.0])])
    assert result.status == 0, result.stderr
    assert result.stdout.splitlines() == [
        "point        img/s before -> after",
        "b1_s64_amp1  100.0 -> 100.5 (+0%)  [NOT significant]",
        "b2_s64_amp1  200.0 -> 201.0 (+0%)  [NOT significant]",
        "b4_s64_amp1  not compared: only in before",
        "b8_s64_amp1  not compared: only in after",
    ]


def test_a_regression_at_one_point_fails_the_gate(tmp_path: Path) -> None:
    argv = ["profile", "compare", *_sweeps(tmp_path, [160.0, 162.0, 158.0])]
    result = invoke([*argv, "--fail-on-regression", "5"])
    assert result.status == 4
    lines = result.stdout.splitlines()
    assert lines[2].startswith("b2_s64_amp1  200.0 -> 160.0 (-20%)  [significant]  gate FAILED")
    assert lines[-1] == "gate: FAILED at 1 of 2 compared points"
    assert result.stderr == (
        "regression: b2_s64_amp1: img/s fell 20.0% (> 5%), significant (Welch t, df=4.0)\n"
    )
    doc = json.loads(invoke([*argv, "--fail-on-regression", "5", "--json"]).stdout)
    assert doc["gate"] == {"threshold_pct": 5.0, "num_failed": 1, "failed": True}
    assert [p["gate"] and p["gate"]["failed"] for p in doc["points"]] == [False, True, None, None]
    assert doc["points"][1]["batch"] == 2 and doc["points"][1]["img_per_s"]["significant"]


def test_a_failed_point_is_not_compared(tmp_path: Path) -> None:
    result = invoke(["profile", "compare", *_sweeps(tmp_path, None), "--fail-on-regression", "5"])
    assert result.status == 0, result.stderr
    assert "b2_s64_amp1  not compared: after failed" in result.stdout.splitlines()
    assert result.stdout.splitlines()[-1] == "gate: passed at all 1 compared points"


def test_a_point_without_trials_is_named(tmp_path: Path) -> None:
    result = invoke(
        ["profile", "compare", *_sweeps(tmp_path, [160.0]), "--fail-on-regression", "5"]
    )
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == (
        "point b2_s64_amp1: --fail-on-regression needs trials on both sides; the after profile "
        "is a single run: measure it with --repeat 3\n"
    )


def test_a_sweep_against_a_profile_exits_2(tmp_path: Path) -> None:
    a, _ = _sweeps(tmp_path, [160.0])
    profile = str(Path(a) / "b1_s64_amp1" / "infer" / "profile_repeat.json")
    result = invoke(["profile", "compare", a, profile])
    assert result.status == 2
    assert result.stderr == "compare takes two profiles or two sweep folders, not one of each\n"
