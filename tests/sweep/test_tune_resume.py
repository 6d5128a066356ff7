"""Resume under a tune search: its own settings change no measurement, and a batch recorded as
not fitting is a bound it keeps; a plain grid measures failed points again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from libreyolo.sweep.point import run_point
from tests.sweep.test_resume import _cfg, _recorded_point, measured  # noqa: F401  (a fixture)


def _tuned(tmp_path: Path, **tune: Any) -> dict[str, Any]:
    cfg = _cfg(tmp_path)
    cfg["tune"] = cfg["tune"] | tune
    return cfg


@pytest.mark.parametrize(
    ("recorded", "now", "reused"),
    [
        ({"batch_max": 8}, {"batch_max": 64, "goal": "maxfit", "min_gain_pct": 1.0}, True),
        ({"memory_budget_mb": 600.0}, {"memory_budget_mb": 800.0}, False),  # the budget counts
    ],
)
def test_the_search_settings_do_not_stop_a_point_being_reused(
    tmp_path: Path,
    measured: list[Path],  # noqa: F811
    recorded: dict[str, Any],
    now: dict[str, Any],
    reused: bool,
) -> None:
    def words(tune: dict[str, Any]) -> list[str]:
        return ["batch=1", *(f"tune.{k}={v}" for k, v in tune.items())]

    old = _tuned(tmp_path, **recorded)
    folder = _recorded_point(tmp_path, old, words(recorded), measured=(old, words(recorded)))
    record = run_point(_tuned(tmp_path, **now), folder, isolate=False, overrides=words(now))
    assert record.reused is reused
    assert measured == ([] if reused else [folder])


@pytest.mark.parametrize(
    ("code", "reuse_bounds", "reused"),
    [
        ("oom", True, True),
        ("over_budget", True, True),
        ("oom", False, False),  # a plain grid measures a failed point again
        ("usage", True, False),  # a failure that is no bound is measured again
    ],
)
def test_a_bound_is_reused_by_a_tune_search_only(
    tmp_path: Path,
    measured: list[Path],  # noqa: F811
    code: str,
    reuse_bounds: bool,
    reused: bool,
) -> None:
    cfg = _cfg(tmp_path)
    folder = _recorded_point(tmp_path, cfg, ["batch=1"], status="failed", code=code, profile=None)
    record = run_point(cfg, folder, isolate=False, overrides=["batch=1"], reuse_bounds=reuse_bounds)
    assert measured == ([] if reused else [folder])
    if reused:
        assert (record.status, record.code, record.reused) == ("failed", code, True)
        saved = json.loads((folder / "status.json").read_text(encoding="utf-8"))
        assert saved["reused"] is True and saved["code"] == code


def test_a_bound_whose_kept_profile_measured_other_settings_is_measured_again(
    tmp_path: Path,
    measured: list[Path],  # noqa: F811
) -> None:
    cfg = _cfg(tmp_path)
    other = (cfg | {"imgsz": 96}, ["batch=1"])  # an over_budget point keeps its profile
    folder = _recorded_point(
        tmp_path, cfg, ["batch=1"], measured=other, status="failed", code="over_budget"
    )
    run_point(cfg, folder, isolate=False, overrides=["batch=1"], reuse_bounds=True)
    assert measured == [folder]
