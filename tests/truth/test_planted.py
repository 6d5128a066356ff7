"""Planted bottlenecks on CPU, measured end to end: the verdict must name what was planted.

Windows are small (CI time), but the planted effects are large (tens of times the noise), so
each verdict has a wide margin; see tests/truth/scenarios.py for what is planted and how.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.quiet import quietly, starved
from tests.truth.scenarios import SCENARIOS, Scenario, run_scenario

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("truth_inputs")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name.split(" (")[0])
def test_planted_bottleneck_gets_its_verdict(
    scenario: Scenario, inputs: Path, tmp_path: Path
) -> None:
    outcome = quietly(
        lambda: run_scenario(scenario, inputs, tmp_path / "project"),
        lambda done: starved(done.document),
    )
    assert outcome.status == 0, outcome.stderr
    assert outcome.document is not None
    verdict = outcome.document["verdict"]
    assert outcome.bound == scenario.expected("cpu"), (verdict, outcome.evidence)
    assert outcome.problems == [], (verdict, outcome.evidence)
    assert verdict["levers"], "a verdict comes with levers"
    # the planted effects must not read as contention (`quietly` measured until a window was
    # not contended; a planted effect that always did would fail there, "host too busy")
    assert outcome.document["metrics"]["contended"] is False, outcome.document["host"]
