"""Overhead calibration: every profile stores what the profiler added to its own step time
(traced iterations against bare ones of the same run), and `summary` says so above 5 %."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from libreyolo.analysis.build import finalize
from libreyolo.analysis.metrics import profiler_overhead_pct
from libreyolo.analysis.summary import OVERHEAD_NOTE_PCT, summarize
from libreyolo.document.files import save
from libreyolo.document.model import Profile, RunInfo, Samples, Tool, Window
from tests.conftest import invoke
from tests.truth.scenarios import plain_checkpoint


def _inference(traced_ms: float, bare_ms: float, *, profiler_on: bool | None = True) -> Profile:
    return finalize(
        Profile(
            kind="infer",
            created=None,
            tool=Tool(version="2.0.0"),
            run=RunInfo(mode="inference", batch=1),
            window=Window(
                num_warmup=1,
                num_measured=8,
                num_unsynced=4,
                num_synced=4,
                num_bare=4 if profiler_on else 0,
                profiler_on=profiler_on,
            ),
            samples=Samples(
                latency_ms=[traced_ms, traced_ms + 0.2, traced_ms - 0.2, traced_ms],
                bare_ms=[bare_ms, bare_ms + 0.1, bare_ms - 0.1, bare_ms] if profiler_on else [],
            ),
        )
    )


def test_overhead_is_the_ratio_of_medians() -> None:
    assert profiler_overhead_pct(_inference(11.0, 10.0)) == 10.0
    assert profiler_overhead_pct(_inference(10.0, 10.0)) == 0.0
    assert profiler_overhead_pct(_inference(9.8, 10.0)) == -2.0  # noise can go either way


def test_untraced_runs_carry_no_overhead_and_old_files_none() -> None:
    assert _inference(10.0, 0.0, profiler_on=False).metrics["profiler_overhead_pct"] == 0.0
    assert _inference(10.0, 0.0, profiler_on=None).metrics["profiler_overhead_pct"] is None


@pytest.mark.parametrize(("traced_ms", "noted"), [(11.0, True), (10.5, False), (10.2, False)])
def test_summary_mentions_overhead_above_five_percent(
    traced_ms: float, noted: bool, tmp_path: Path
) -> None:
    profile = _inference(traced_ms, 10.0)
    overhead = profile.metrics["profiler_overhead_pct"]
    assert isinstance(overhead, float) and (overhead > OVERHEAD_NOTE_PCT) is noted
    notes = [n for n in summarize(profile).notes if n.startswith("profiler overhead")]
    assert bool(notes) is noted
    path = save(profile, tmp_path / "profile.json")
    text = invoke(["profile", "summary", str(path)])
    assert text.status == 0
    assert ("note: profiler overhead: +10.0%" in text.stdout) is noted
    listed = invoke(["profile", "get", str(path), "profiler_overhead_pct"])
    assert listed.stdout.strip() == f"{overhead}"


@pytest.mark.slow
def test_every_measured_profile_stores_its_overhead(tmp_path: Path) -> None:
    weights = plain_checkpoint(tmp_path)
    base = ["profile", "infer", "--weights", str(weights), "--device", "cpu", "--imgsz", "64"]
    base += ["--warmup", "1", "--runs", "6", "--json"]
    traced = invoke([*base, "--project", str(tmp_path / "traced")])
    untraced = invoke([*base, "--no-trace", "--project", str(tmp_path / "untraced")])
    for result in (traced, untraced):
        assert result.status == 0, result.stderr
    docs = [
        json.loads(Path(r.json()["profile"]).read_text(encoding="utf-8"))  # type: ignore[index]
        for r in (traced, untraced)
    ]
    on, off = docs
    assert on["window"]["num_bare"] == 3 and len(on["samples"]["bare_ms"]) == 3
    assert on["window"]["profiler_on"] is True
    assert isinstance(on["metrics"]["profiler_overhead_pct"], float)
    assert off["window"] | {"num_bare": 0, "profiler_on": False} == off["window"]
    assert off["metrics"]["profiler_overhead_pct"] == 0.0
