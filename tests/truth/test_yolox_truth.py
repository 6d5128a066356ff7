"""YOLOX's training step, whose SimOTA assigner loops over the images in Python with host syncs:
the profile must show those syncs where they happen and hold the assigner's time.

Known answers come from the step itself, measured directly in the same run: every call of
`simota_assign` (one per image per iteration) is counted and timed. The profile must count at
least one host read (`aten::item`) per assigned image in the `forward` phase, and its forward
wall time per step must hold the assigner's directly timed share.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from libreyolo.measure.variant_trials import REPEATS
from libreyolo.workload.yolox import loss as yolox_loss
from tests.conftest import CliResult, invoke
from tests.fixture_files import YOLOX_N, fixture_file
from tests.quiet import quietly, read_json, starved

pytestmark = pytest.mark.slow
CHECKPOINT = fixture_file(YOLOX_N)
BATCH, STEPS, WARMUP = 4, 6, 1


def _timed(func: Callable[..., Any], calls: list[float]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            calls.append((time.perf_counter() - start) * 1000.0)

    return wrapper


def test_yolox_step_shows_the_assigner_and_its_host_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[float] = []
    monkeypatch.setattr(yolox_loss, "simota_assign", _timed(yolox_loss.simota_assign, calls))
    argv = [
        "profile",
        "run",
        "synthetic",
        "--weights",
        str(CHECKPOINT),
        "--device",
        "cpu",
        "--batch",
        str(BATCH),
        "--imgsz",
        "160",
        "--steps",
        str(STEPS),
        "--warmup",
        str(WARMUP),
        "--workers",
        "0",
        "--project",
        str(tmp_path),
    ]

    def measure() -> CliResult:
        calls.clear()  # the assigner's calls of this try only
        return invoke(argv)

    result = quietly(measure, lambda _: starved(read_json(tmp_path / "run" / "profile.json")))
    assert result.status == 0, result.stderr
    doc = json.loads((tmp_path / "run" / "profile.json").read_text())
    window = doc["window"]
    iterations = window["num_warmup"] + window["num_measured"] + window["num_bare"]
    # known answer 1: one assignment per image with boxes per iteration (augmentation can push
    # every box of an image out of the frame; most keep theirs), and per pass of the
    # channels-last trial after the window (a warm pass and REPEATS timed ones, each layout)
    trials = {t["variant"] for t in doc["variant_trials"]}
    passes = 2 * (1 + REPEATS) if "channels_last" in trials else 0
    assert BATCH * iterations // 2 <= len(calls) <= BATCH * (iterations + passes)
    ops = invoke(
        [
            "profile",
            "ops",
            str(tmp_path / "run" / "profile.json"),
            "--phase",
            "forward",
            "--top",
            "1000",
            "--json",
        ]
    ).json()
    rows = {row["op"]: row for row in ops["ops"]}  # type: ignore[index]
    # known answer 2: each image's real rows are read back (1.6.0's int() per image) and each
    # assignment its positive count (`.item()`): at least one host read per image, in forward
    assert rows["aten::item"]["count_per_step"] >= BATCH
    # known answer 3: the assigner runs inside forward, so forward holds its time
    assign_ms_per_step = sum(calls) / iterations
    phases = {p["name"]: p for p in doc["trace"]["phases"]}
    forward_ms = phases["forward"]["wall_ms_per_step"]
    assert forward_ms >= 0.8 * assign_ms_per_step, (forward_ms, assign_ms_per_step)
    share = assign_ms_per_step / doc["metrics"]["step_ms"]
    assert 0.0 < share < 1.0
