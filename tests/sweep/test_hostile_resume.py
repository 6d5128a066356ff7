"""Resume reuses only the profile the measurement wrote: `status.json` records its SHA-256, and a
point whose profile was edited, replaced or linked, whose status records no digest (a folder
from before it was recorded) or whose `status.json` is a link is measured again, after one
`note:` line naming the point and why."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from libreyolo.document.sweep_model import PointRequest
from libreyolo.sweep import point as point_module
from libreyolo.sweep.point import WindowClock, run_point
from tests.sweep.helpers import tiny_sweep_argv
from tests.sweep.test_resume import _cfg, _record_digest, _recorded_point, measured  # noqa: F401

NOTE = "note: b1_s64_amp1 measured again: "


def _edit_json(path: Path, change: dict[str, Any]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(data | change), encoding="utf-8")


def _numbers_edited(folder: Path) -> None:
    """The same settings, other numbers: a hand edit, or a tool that rewrote the file."""
    profile_path = folder / "infer" / "profile.json"
    profile = json.loads(profile_path.read_text(encoding="utf-8"))
    profile["metrics"]["img_per_s"] = 5000.0
    profile_path.write_text(json.dumps(profile), encoding="utf-8")


def _linked_to_a_copy(folder: Path) -> None:
    """The profile replaced by a link to another file of the folder with the same settings
    (it still reads back as this point's) and other numbers."""
    profile_path = folder / "infer" / "profile.json"
    profile_path.rename(folder / "infer" / "edited.json")
    profile_path.symlink_to("edited.json")
    _numbers_edited(folder)  # through the link


def _linked_outside(folder: Path) -> None:
    """The profile replaced by a link to a file elsewhere (the sweep refused it before too)."""
    profile_path = folder / "infer" / "profile.json"
    outside = folder.parent / "elsewhere.json"
    outside.write_bytes(profile_path.read_bytes())
    profile_path.unlink()
    profile_path.symlink_to(outside)


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (_numbers_edited, "its profile infer/profile.json changed since it was measured"),
        (_linked_to_a_copy, "its profile infer/profile.json changed since it was measured"),
        (_linked_outside, "its record does not read back (profile path outside the sweep"),
    ],
)
def test_a_profile_changed_since_it_was_measured_is_measured_again(
    tmp_path: Path,
    measured: list[Path],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    edit: Any,
    why: str,
) -> None:
    cfg = _cfg(tmp_path)
    folder = _recorded_point(tmp_path, cfg, ["batch=1"])
    edit(folder)
    record = run_point(cfg, folder, isolate=False, overrides=["batch=1"])
    assert measured == [folder] and record.reused is False
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(NOTE + why), lines


def test_a_point_recorded_before_digests_is_measured_again(
    tmp_path: Path,
    measured: list[Path],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An old folder: its status cannot be told from one edited to drop the digest (or to
    claim done a point that stopped midway), so it is measured again rather than trusted."""
    cfg = _cfg(tmp_path)
    folder = _recorded_point(tmp_path, cfg, ["batch=1"])
    status_path = folder / "status.json"
    status = json.loads(status_path.read_text(encoding="utf-8"))
    del status["profile_sha256"]
    status_path.write_text(json.dumps(status), encoding="utf-8")
    run_point(cfg, folder, isolate=False, overrides=["batch=1"])
    assert measured == [folder]
    assert capsys.readouterr().err == (
        NOTE + "its status.json records no profile digest (written before digests were, or "
        "edited)\n"
    )


def test_a_status_json_linked_from_elsewhere_is_no_bound(
    tmp_path: Path,
    measured: list[Path],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A tune search keeps a recorded out-of-memory point as a bound; not one whose status is
    a link to another folder's."""
    cfg = _cfg(tmp_path)
    folder = _recorded_point(tmp_path, cfg, ["batch=1"])
    elsewhere = tmp_path / "elsewhere.json"
    oom = {"status": "failed", "reason": "out of memory", "code": "oom", "profile": None}
    elsewhere.write_text(json.dumps(oom), encoding="utf-8")
    (folder / "status.json").unlink()
    (folder / "status.json").symlink_to(elsewhere)
    record = run_point(cfg, folder, isolate=False, overrides=["batch=1"], reuse_bounds=True)
    assert measured == [folder] and record.status == "ok"
    assert capsys.readouterr().err == NOTE + "its status.json is a symbolic link\n"
    assert not (folder / "status.json").is_symlink()  # replaced, the file it named untouched
    assert json.loads(elsewhere.read_text(encoding="utf-8")) == oom


def test_a_profile_with_its_recorded_digest_is_reused_quietly(
    tmp_path: Path,
    measured: list[Path],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = _cfg(tmp_path)
    folder = _recorded_point(tmp_path, cfg, ["batch=1"])
    _numbers_edited(folder)
    _record_digest(folder)  # as if the measurement had written these numbers
    assert run_point(cfg, folder, isolate=False, overrides=["batch=1"]).reused is True
    assert measured == [] and capsys.readouterr().err == ""


def test_the_measurement_records_its_profiles_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `_measure` records is the digest of the file it committed (here a stand-in
    measurement writes it)."""
    from libreyolo.measure import from_config

    cfg = _cfg(tmp_path)
    profile_path = tmp_path / "infer" / "profile.json"

    def fake(*args: Any, **kwargs: Any) -> tuple[object, Path]:
        profile_path.parent.mkdir(parents=True)
        profile_path.write_text('{"metrics": {"img_per_s": 1.0}}', encoding="utf-8")
        return object(), profile_path

    monkeypatch.setattr(from_config, "measure_config", fake)
    request = PointRequest(config=cfg, overrides=["batch=1"])
    record = point_module._measure(request, tmp_path, WindowClock())
    assert record.profile == "infer/profile.json"
    assert record.profile_sha256 == hashlib.sha256(profile_path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_a_resumed_sweep_measures_an_edited_point_again(tmp_path: Path) -> None:
    def sweep() -> subprocess.CompletedProcess[str]:
        argv = tiny_sweep_argv(tmp_path, "batch=1", "imgsz=64")
        return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)

    assert sweep().returncode == 0
    folder = tmp_path / "b1_s64_amp1"
    status = json.loads((folder / "status.json").read_text(encoding="utf-8"))
    profile_path = folder / status["profile"]
    assert status["profile_sha256"] == hashlib.sha256(profile_path.read_bytes()).hexdigest()
    _edit_json(profile_path, {"note": "edited"})

    again = sweep()
    assert again.returncode == 0, again.stderr
    assert NOTE + "its profile infer/profile.json changed since it was measured" in again.stderr
    assert "b1_s64_amp1: ok" in again.stdout
    redone = json.loads((folder / "status.json").read_text(encoding="utf-8"))
    assert redone["lease_acquired_at"] != status["lease_acquired_at"]
    assert redone["profile_sha256"] == hashlib.sha256(profile_path.read_bytes()).hexdigest()


def test_a_profile_in_a_link_loop_is_measured_again(
    tmp_path: Path,
    measured: list[Path],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = _cfg(tmp_path)
    folder = _recorded_point(tmp_path, cfg, ["batch=1"])
    profile_path = folder / "infer" / "profile.json"
    profile_path.unlink()
    profile_path.symlink_to("profile.json")  # resolving it never ends
    run_point(cfg, folder, isolate=False, overrides=["batch=1"])
    assert measured == [folder]
    assert capsys.readouterr().err == (
        NOTE + "its record does not read back (profile path outside the sweep folder)\n"
    )
