"""Timing and verdict tests on a machine that other work may share.

A test that asserts a timing or a verdict reads the profile's own contention figures
(`metrics.contended`: its threads waited ≥ 20 % of their runnable time for a CPU, or steal ≥
10 %). A contended window's numbers are the host's load, not the code's, so the test measures
again, up to QUIET_TRIES times with a growing pause between, and then fails with "host too
busy to check" and the waits it saw: it never asserts a verdict on starved numbers.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.conftest import CliResult, invoke

T = TypeVar("T")
QUIET_TRIES = 3  # measurements before giving up on the host
SETTLE_S = 2.0  # the pause before the second try; the third waits twice as long


def starved(document: dict[str, Any] | None) -> str | None:
    """`CPU wait 48%` when the profile (or sweep row) `document` says its window was starved,
    else None (also when it cannot tell: the test's own assertions then speak)."""
    metrics = (document or {}).get("metrics") or {}
    if metrics.get("contended") is not True:
        return None
    wait = metrics.get("cpu_wait_frac")
    return f"CPU wait {wait:.0%}" if isinstance(wait, int | float) else "steal"


def quietly(measure: Callable[[], T], how_starved: Callable[[T], str | None]) -> T:
    """`measure()`'s result once `how_starved` finds it was not starved; pytest.fail after
    QUIET_TRIES starved ones, naming what each measured."""
    seen = []
    for attempt in range(QUIET_TRIES):
        result = measure()
        wait = how_starved(result)
        if wait is None:
            return result
        seen.append(wait)
        if attempt + 1 < QUIET_TRIES:
            time.sleep(SETTLE_S * (attempt + 1))
    pytest.fail(
        f"host too busy to check: {QUIET_TRIES} measurements in a row were contended "
        f"({', '.join(seen)}); run again on a quieter machine",
        pytrace=False,
    )


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object at `path`, or None when there is none (the command failed)."""
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def invoke_quietly(argv: list[str], profile: Path) -> CliResult:
    """`invoke(argv)` again until the profile it writes at `profile` is not contended."""
    return quietly(lambda: invoke(argv), lambda _: starved(read_json(profile)))


def sweep_quietly(
    run: Callable[[], subprocess.CompletedProcess[str]], sweep_dir: Path
) -> subprocess.CompletedProcess[str]:
    """`run()` (a sweep into `sweep_dir`, emptied before each try so nothing is resumed) again
    until no point of its `sweep.json` was measured contended."""

    def fresh() -> subprocess.CompletedProcess[str]:
        shutil.rmtree(sweep_dir, ignore_errors=True)
        sweep_dir.mkdir(parents=True)
        return run()

    def how_starved(_: object) -> str | None:
        points = (read_json(sweep_dir / "sweep.json") or {}).get("points") or {}
        waits = [w for w in map(starved, points.values()) if w is not None]
        return ", ".join(waits) or None

    return quietly(fresh, how_starved)
