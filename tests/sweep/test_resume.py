"""Resume: the same command into the same sweep folder measures only what is not done yet."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import ProfileConfig
from libreyolo.document.convert import to_plain
from libreyolo.document.sweep_files import inside
from libreyolo.document.sweep_model import PointStatus
from libreyolo.sweep import point as point_module
from libreyolo.sweep.point import run_point
from tests.sweep.helpers import tiny_sweep_argv
from tests.sweep.test_report import make_point

NAMES = ("b1_s64_amp1", "b2_s64_amp1")


def _sweep(sweep_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = tiny_sweep_argv(sweep_dir, "batch=1,2", "imgsz=64", *extra)
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


def _status(sweep_dir: Path, name: str) -> dict[str, Any]:
    return dict(json.loads((sweep_dir / name / "status.json").read_text(encoding="utf-8")))


def _measured(before: dict[str, Any], after: dict[str, Any]) -> bool:
    return before["lease_acquired_at"] != after["lease_acquired_at"]


@pytest.mark.slow
def test_rerunning_a_sweep_reuses_complete_points_and_measures_the_rest(tmp_path: Path) -> None:
    assert _sweep(tmp_path).returncode == 0
    first = {name: _status(tmp_path, name) for name in NAMES}

    again = _sweep(tmp_path)
    assert again.returncode == 0, again.stderr
    second = {name: _status(tmp_path, name) for name in NAMES}
    for name in NAMES:  # nothing measured: the record is the first run's, marked reused
        assert second[name] == first[name] | {"reused": True}
        assert f"{name}: reused" in again.stdout
    assert again.stdout.splitlines()[-2] == "all 2 points ok, 2 reused"
    data = json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))
    assert data["num_reused"] == 2 and all(p["reused"] for p in data["points"].values())
    assert all(p["status"] == "ok" for p in data["points"].values())

    # A truncated profile is not complete: only that point is measured again.
    (tmp_path / NAMES[1] / "infer" / "profile.json").write_text("{trunc", encoding="utf-8")
    third = _sweep(tmp_path)
    assert third.returncode == 0, third.stderr
    assert not _measured(first[NAMES[0]], _status(tmp_path, NAMES[0]))
    assert _measured(first[NAMES[1]], _status(tmp_path, NAMES[1]))
    assert "reused" not in _status(tmp_path, NAMES[1])
    assert third.stdout.splitlines()[-2] == "all 2 points ok, 1 reused"

    # sweep.resume=false measures every point again.
    fresh = _sweep(tmp_path, "sweep.resume=false")
    assert fresh.returncode == 0, fresh.stderr
    assert all(_measured(first[name], _status(tmp_path, name)) for name in NAMES)
    assert fresh.stdout.splitlines()[-2] == "all 2 points ok"


def _cfg(tmp_path: Path, **changes: Any) -> dict[str, Any]:
    cfg = as_plain_dict(ProfileConfig())
    cfg["device"] = {"name": "cpu"}
    cfg["sweep"] |= {"lock_dir": str(tmp_path / "locks")}
    return cfg | changes


def _recorded_point(
    tmp_path: Path,
    cfg: dict[str, Any],
    overrides: list[str],
    *,
    measured: tuple[dict[str, Any], list[str]] | None = None,
    flat_copy: bool = False,
    **status: Any,
) -> Path:
    """A point folder as an earlier sweep left it (an ok point with a profile by default),
    its profile recording the settings it was measured with (`measured`: other ones than the
    point.json claims; by default the same, as the sweep records them). `flat_copy`: the
    profile as written before `run.config` was the resolved config (under `resolved`, beside
    a flat copy of the collector's settings)."""
    make_point(tmp_path, 1, 64, 50.0, status=status)
    folder = tmp_path / "b1_s64_amp1"
    request = {"config": cfg, "overrides": overrides, "device": "cpu", "held_device": "cpu"}
    (folder / "point.json").write_text(json.dumps(request), encoding="utf-8")
    profile_path = folder / "infer" / "profile.json"
    profile = json.loads(profile_path.read_text(encoding="utf-8"))
    resolved, recorded = measured or (cfg | {"project": str(folder)}, overrides)
    config = {"resolved": resolved, "batch": 64, "model_family": "yolo9"} if flat_copy else resolved
    profile["run"] |= {"config": config, "overrides": recorded}
    profile_path.write_text(json.dumps(profile), encoding="utf-8")
    _record_digest(folder)
    return folder


def _record_digest(folder: Path) -> None:
    """Record the profile's digest in `status.json`, as the measurement does once it wrote it
    (a status naming no profile, or one outside the folder, gets none)."""
    status_path = folder / "status.json"
    status = json.loads(status_path.read_text(encoding="utf-8"))
    profile = inside(folder, status.get("profile"))
    if profile is not None and profile.is_file():
        status["profile_sha256"] = hashlib.sha256(profile.read_bytes()).hexdigest()
        status_path.write_text(json.dumps(status), encoding="utf-8")


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Stands in for a measurement: records which points would have been measured."""
    calls: list[Path] = []

    def fake(request_path: Path) -> PointStatus:
        calls.append(request_path.parent)
        return PointStatus(status="ok", reason="", code="", profile="infer/profile.json")

    monkeypatch.setattr(point_module, "measure_request", fake)
    return calls


@pytest.mark.parametrize(
    ("status", "overrides", "changes", "reused"),
    [
        ({}, ["batch=1"], {}, True),
        ({}, ["batch=1", "sweep.resume=true"], {}, True),  # resume itself does not count
        ({"status": "interrupted", "code": "interrupted"}, ["batch=1"], {}, False),
        ({"status": "failed", "code": "oom"}, ["batch=1"], {}, False),
        ({}, ["batch=1"], {"imgsz": 96}, False),  # another config
        ({}, ["batch=1", "amp=false"], {}, False),  # other overrides
        ({"profile": "../../elsewhere.json"}, ["batch=1"], {}, False),
    ],
)
def test_a_recorded_point_is_reused_only_when_it_matches_and_is_complete(
    tmp_path: Path,
    measured: list[Path],
    status: dict[str, Any],
    overrides: list[str],
    changes: dict[str, Any],
    reused: bool,
) -> None:
    folder = _recorded_point(tmp_path, _cfg(tmp_path), overrides, **status)
    record = to_plain(
        run_point(_cfg(tmp_path, **changes), folder, isolate=False, overrides=["batch=1"])
    )
    assert isinstance(record, dict)
    assert measured == ([] if reused else [folder])
    assert record.get("reused", False) is reused
    assert json.loads((folder / "status.json").read_text(encoding="utf-8")) == record


@pytest.mark.parametrize(
    "measured_with",
    [
        ({"batch": 2}, ["batch=1"]),  # a copied folder: the profile measured another batch
        ({}, ["batch=2"]),  # other overrides than the point.json claims
        ({"window": {"warmup": 0, "steps": 20, "runs": 100, "repeat": 1}}, ["batch=1"]),
    ],
)
def test_a_profile_measured_with_other_settings_than_point_json_claims_is_not_reused(
    tmp_path: Path, measured: list[Path], measured_with: tuple[dict[str, Any], list[str]]
) -> None:
    cfg = _cfg(tmp_path)
    changes, overrides = measured_with
    folder = _recorded_point(tmp_path, cfg, ["batch=1"], measured=(cfg | changes, overrides))
    record = to_plain(run_point(cfg, folder, isolate=False, overrides=["batch=1"]))
    assert isinstance(record, dict)
    assert measured == [folder] and "reused" not in record


@pytest.mark.parametrize("flat_copy", [False, True])
@pytest.mark.parametrize("changes", [{}, {"imgsz": 96}])
def test_the_recorded_config_is_read_in_both_profile_shapes(
    tmp_path: Path, measured: list[Path], flat_copy: bool, changes: dict[str, Any]
) -> None:
    cfg = _cfg(tmp_path)
    folder = _recorded_point(
        tmp_path, cfg, ["batch=1"], measured=(cfg | changes, ["batch=1"]), flat_copy=flat_copy
    )
    record = run_point(cfg, folder, isolate=False, overrides=["batch=1"])
    assert measured == ([] if not changes else [folder])
    assert record.reused is (not changes)  # reused exactly when nothing changed


def test_a_profile_that_records_no_settings_is_not_reused(
    tmp_path: Path, measured: list[Path]
) -> None:
    cfg = _cfg(tmp_path)
    folder = _recorded_point(tmp_path, cfg, ["batch=1"])
    profile_path = folder / "infer" / "profile.json"
    profile = json.loads(profile_path.read_text(encoding="utf-8"))
    del profile["run"]["config"]  # an older or hand-made file: nothing to check it against
    profile_path.write_text(json.dumps(profile), encoding="utf-8")
    _record_digest(folder)  # its digest holds: the missing settings alone refuse it
    run_point(cfg, folder, isolate=False, overrides=["batch=1"])
    assert measured == [folder]


def test_an_imgsz_rounded_to_the_stride_still_matches(tmp_path: Path, measured: list[Path]) -> None:
    cfg = _cfg(tmp_path, imgsz=100)
    folder = _recorded_point(
        tmp_path, cfg, ["batch=1"], measured=(cfg | {"imgsz": 128}, ["batch=1"])
    )
    record = run_point(cfg, folder, isolate=False, overrides=["batch=1"])
    assert measured == [] and record.reused is True


def test_resume_false_measures_a_complete_point_again(tmp_path: Path, measured: list[Path]) -> None:
    cfg = _cfg(tmp_path)
    folder = _recorded_point(tmp_path, cfg, ["batch=1"])
    cfg["sweep"] = cfg["sweep"] | {"resume": False}
    run_point(cfg, folder, isolate=False, overrides=["batch=1", "sweep.resume=false"])
    assert measured == [folder]
