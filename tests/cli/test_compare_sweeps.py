"""`compare <sweep-a> <sweep-b>`: points matched by their axes, one row each, the gate applied to
every compared point (exit 4 when any fails)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from libreyolo.document.files import save
from libreyolo.document.model import Profile, RunInfo, Tool, Trial
from tests.conftest import invoke


def _point(root: Path, batch: int, img_per_s: list[float] | None, model: str | None = None) -> None:
    """A point folder as a sweep leaves it; None: a failed point (no profile). `model`: the
    point of a grid that also swept `model=`."""
    folder = root / (f"b{batch}_s64_amp1" + (f"_model-{model}" if model else ""))
    (folder / "infer").mkdir(parents=True)
    config = {"batch": batch, "imgsz": 64, "amp": True}
    overrides = [f"batch={batch}"] + ([f"model={model}"] if model else [])
    request = {"config": config, "overrides": overrides}
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
    assert lines[-1] == "gate: FAILED at 1 of 2 compared points; 2 of 4 points not compared"
    assert result.stderr == (
        "regression: b2_s64_amp1: img/s fell 20.0% (> 5%), significant (Welch t, df=4.0); "
        "not compared: b4_s64_amp1 (only in before), b8_s64_amp1 (only in after)\n"
    )
    doc = json.loads(invoke([*argv, "--fail-on-regression", "5", "--json"]).stdout)
    assert doc["gate"] == {
        "threshold_pct": 5.0,
        "num_failed": 1,
        "num_compared": 2,
        "num_not_compared": 2,
        "failed": True,
    }
    assert [p["gate"] and p["gate"]["failed"] for p in doc["points"]] == [False, True, None, None]
    assert doc["points"][1]["batch"] == 2 and doc["points"][1]["img_per_s"]["significant"]
    assert doc["swept"] == []  # batch is an axis: every point names its axes


def _same_grid(tmp_path: Path, after: list[list[float] | None]) -> list[str]:
    """Before: batch 1 and 2, both ok; after: the same grid with `after`'s trials per point."""
    a, b = tmp_path / "a", tmp_path / "b"
    _point(a, 1, [100.0, 101.0, 99.0])
    _point(a, 2, [200.0, 202.0, 198.0])
    for batch, trials in zip((1, 2), after, strict=True):
        _point(b, batch, trials)
    return [str(a), str(b)]


def test_the_gate_passes_only_when_every_point_was_compared(tmp_path: Path) -> None:
    argv = [
        "profile",
        "compare",
        *_same_grid(tmp_path, [[100.5, 101.5, 99.5], [201.0, 203.0, 199.0]]),
    ]
    result = invoke([*argv, "--fail-on-regression", "5"])
    assert result.status == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "gate: passed at all 2 compared points"
    assert result.stderr == ""


def test_a_failed_point_fails_the_gate(tmp_path: Path) -> None:
    argv = ["profile", "compare", *_same_grid(tmp_path, [[100.5, 101.5, 99.5], None])]
    result = invoke([*argv, "--fail-on-regression", "5"])
    assert result.status == 4
    assert "b2_s64_amp1  not compared: after failed" in result.stdout.splitlines()
    assert result.stdout.splitlines()[-1] == (
        "gate: FAILED at 0 of 1 compared points; 1 of 2 points not compared"
    )
    assert result.stderr == "regression: not compared: b2_s64_amp1 (after failed)\n"
    assert invoke(argv).status == 0  # without a gate, compare reports and does not judge


def test_a_sweep_whose_every_point_failed_never_passes(tmp_path: Path) -> None:
    result = invoke(
        ["profile", "compare", *_same_grid(tmp_path, [None, None]), "--fail-on-regression", "5"]
    )
    assert result.status == 4
    assert result.stdout.splitlines()[-1] == "gate: FAILED, none of the 2 points could be compared"
    assert result.stderr == (
        "regression: not compared: b1_s64_amp1 (after failed), b2_s64_amp1 (after failed)\n"
    )


def test_grids_that_share_no_point_fail_the_gate(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _point(a, 1, [100.0, 101.0, 99.0])
    _point(b, 8, [100.0, 101.0, 99.0])
    result = invoke(["profile", "compare", str(a), str(b), "--fail-on-regression", "5"])
    assert result.status == 4
    assert result.stdout.splitlines()[1:] == [
        "b1_s64_amp1  not compared: only in before",
        "b8_s64_amp1  not compared: only in after",
        "gate: FAILED, none of the 2 points could be compared",
    ]


def test_a_change_sweep_that_never_ran_fails_the_gate(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _point(a, 1, [100.0, 101.0, 99.0])
    _point(a, 2, [200.0, 202.0, 198.0])
    b.mkdir()
    plan = {"b1_s64_amp1": ["batch=1"], "b2_s64_amp1": ["batch=2"]}  # planned, never started
    doc = {"schema": "libreyolo.sweep-plan/v1", "points": plan}
    (b / "sweep_plan.json").write_text(json.dumps(doc), encoding="utf-8")
    result = invoke(["profile", "compare", str(a), str(b), "--fail-on-regression", "5"])
    assert result.status == 4
    assert result.stdout.splitlines()[1:3] == [
        "b1_s64_amp1  not compared: after missing",
        "b2_s64_amp1  not compared: after missing",
    ]


def test_points_of_a_two_model_grid_are_matched_by_model(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _point(a, 1, [100.0, 101.0, 99.0], "yolo9t")
    _point(a, 1, [300.0, 303.0, 297.0], "yolox_n")
    _point(b, 1, [300.0, 303.0, 297.0], "yolox_n")  # listed first: matched by model, not order
    _point(b, 1, [100.0, 101.0, 99.0], "yolo9t")
    argv = ["profile", "compare", str(a), str(b), "--fail-on-regression", "5"]
    result = invoke(argv)
    assert result.status == 0, result.stderr
    assert result.stdout.splitlines()[1:] == [
        "b1_s64_amp1_model-yolo9t   100.0 -> 100.0 (+0%)  [NOT significant]  gate passed: img/s "
        "rose 0.0% (no regression), not significant (Welch t, df=4.0)",
        "b1_s64_amp1_model-yolox_n  300.0 -> 300.0 (+0%)  [NOT significant]  gate passed: img/s "
        "rose 0.0% (no regression), not significant (Welch t, df=4.0)",
        "gate: passed at all 2 compared points",
    ]
    doc = json.loads(invoke([*argv, "--json"]).stdout)
    assert doc["swept"] == ["model"]
    assert [p["model"] for p in doc["points"]] == ["yolo9t", "yolox_n"]


def test_two_points_of_one_sweep_with_the_same_settings_exit_2(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _point(a, 1, [100.0, 101.0, 99.0])
    twin = a / "copy_of_b1"
    (a / "b1_s64_amp1").rename(twin)
    _point(a, 1, [100.0, 101.0, 99.0])
    _point(b, 1, [100.0, 101.0, 99.0])
    result = invoke(["profile", "compare", str(a), str(b)])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == (
        "points b1_s64_amp1 and copy_of_b1 of one sweep have the same settings: they cannot be "
        "matched to the other sweep's (compare sweeps whose point folders name every swept key)\n"
    )


def test_the_gate_refuses_a_training_profile_against_an_inference_one(tmp_path: Path) -> None:
    trials = [Trial(index=i, metrics={"img_per_s": v}) for i, v in enumerate([10.0, 11.0])]
    paths = []
    for mode in ("training", "inference"):
        profile = Profile(
            kind="train" if mode == "training" else "infer",
            created=None,
            tool=Tool(version="2.0.0"),
            run=RunInfo(mode=mode, batch=1, imgsz=64),
            metrics={"img_per_s": 10.5, "latency_p50_ms": 95.0},
            trials=trials,
        )
        paths.append(str(tmp_path / f"{mode}.json"))
        save(profile, Path(paths[-1]))
    result = invoke(["profile", "compare", *paths, "--fail-on-regression", "5"])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == (
        "--fail-on-regression gates like against like: the before profile is a training run, "
        "the after profile an inference run (compare two training profiles or two inference "
        "profiles)\n"
    )
    assert invoke(["profile", "compare", *paths]).status == 0  # reporting alone is fine


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


def _record(root: Path) -> None:
    """Write `root`'s sweep.json as the sweep does at its end (absolute profile paths)."""
    from libreyolo.analysis.sweep import sweep_record
    from libreyolo.document.convert import to_plain
    from libreyolo.document.sweep_files import collect_sweep

    record = sweep_record(str(root.resolve()), collect_sweep(root.resolve()))
    (root / "sweep.json").write_text(json.dumps(to_plain(record)), encoding="utf-8")


def test_a_copied_sweep_is_compared_with_its_own_files(tmp_path: Path) -> None:
    a, b = (Path(p) for p in _same_grid(tmp_path, [[100.5, 101.5, 99.5], [201.0, 203.0, 199.0]]))
    _record(a)
    _record(b)
    copy = tmp_path / "artifact"
    shutil.copytree(b, copy)  # a CI artifact: sweep.json still names b's absolute paths
    shutil.rmtree(b / "b2_s64_amp1")
    _point(b, 2, [100.0, 101.0, 99.0])  # the original moves on: a 50 % "regression" there
    result = invoke(["profile", "compare", str(a), str(copy), "--fail-on-regression", "5"])
    assert result.status == 0, result.stderr
    assert result.stdout.splitlines()[2].startswith("b2_s64_amp1  200.0 -> 201.0 (+0%)")


def test_a_profile_path_outside_the_sweep_is_never_read(tmp_path: Path) -> None:
    a, b = (Path(p) for p in _same_grid(tmp_path, [[100.5, 101.5, 99.5], [201.0, 203.0, 199.0]]))
    _record(b)
    elsewhere = tmp_path / "elsewhere"
    _point(elsewhere, 1, [10.0, 11.0, 9.0])
    outside = elsewhere / "b1_s64_amp1" / "infer" / "profile_repeat.json"
    _record(a)
    record = json.loads((a / "sweep.json").read_text(encoding="utf-8"))
    record["points"]["b1_s64_amp1"]["profile"] = str(outside)  # tampered: leads out
    (a / "sweep.json").write_text(json.dumps(record), encoding="utf-8")
    result = invoke(["profile", "compare", str(a), str(b), "--fail-on-regression", "5"])
    assert result.status == 4
    assert result.stdout.splitlines()[1] == (
        f"b1_s64_amp1  not compared: before profile lost: profile not found inside the sweep "
        f"folder: {outside}"
    )
