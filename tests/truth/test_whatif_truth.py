"""What-if against reality: the projection next to the change made real and measured.

`what-if --remove-category norm` on an unfused CPU profile projects the step without the
BatchNorm ops; `infer --fuse bn` folds exactly those BatchNorms into the convolutions (same
convolutions, same layout), so its measured step is the truth the projection is checked against.
The bound comes from libreyolo.analysis.whatif.CHECKED, the table the what-if output quotes, so the
output can never claim more accuracy than this test enforces.

A shared VM drifts by 30 % over seconds (seen in CI: a folded run slower than the unfused run
before it, with no run-queue wait or steal to show for it), more than the 10 % bound. So every
folded run is bracketed by unfused runs (A B A B A ...): a pair whose two unfused runs disagree
by more than DRIFT_PCT caught the machine changing speed and checks nothing, and the projection
is checked as a fraction of the bracketing unfused step, which a steady drift moves on both sides.

CI's VM drifts 5-20 % between runs two seconds apart (issue 25's stop: 11 of 12 pairs over 5 %,
yet the median error of all twelve was 4 %). A 15 % bracket leaves any one pair's midpoint within
7.5 % of both its neighbours, and the median of five such pairs, whose drifts go either way, is
what decides; wider brackets than that are out.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

import pytest

from libreyolo.analysis.whatif import CHECKED, NOT_CHECKED
from tests.conftest import invoke
from tests.quiet import invoke_quietly
from tests.truth.scenarios import one_thread, plain_checkpoint

# 15 traced iterations per profile; imgsz 192 keeps one profile at ~1.5 s on one core.
WINDOW = ["--device", "cpu", "--imgsz", "192", "--warmup", "3", "--runs", "30"]
STEADY_PAIRS = 5  # pairs whose median error decides: two caught in a spike do not
MAX_PAIRS = 16  # folded runs measured before the host is called too unsteady to check
DRIFT_PCT = 15.0  # the two unfused runs around a folded one agree within this, or the pair is out


@dataclass(frozen=True)
class Run:
    """One `infer` profile: its path, and its median end-to-end latency."""

    path: str
    median_ms: float


def _profile(weights: Path, fuse: str, project: Path) -> Run:
    argv = ["profile", "infer", "--weights", str(weights), *WINDOW, "--fuse", fuse]
    argv += ["--project", str(project), "--json"]
    result = invoke_quietly(argv, project / "infer" / "profile.json")
    assert result.status == 0, result.stderr
    path = str(result.json()["profile"])  # type: ignore[index]
    latency_ms = json.loads(Path(path).read_text(encoding="utf-8"))["samples"]["latency_ms"]
    return Run(path, statistics.median(latency_ms))


def _projected_fraction(unfused: Run) -> float:
    """What-if's projected step over the step it starts from, for removing norm."""
    result = invoke(["profile", "what-if", unfused.path, "--remove-category", "norm", "--json"])
    assert result.status == 0, result.stderr
    out = result.json()
    assert isinstance(out, dict) and out["regime"] == "cpu"
    assert out["checked"] == CHECKED[("cpu", "norm")].statement("cpu", "norm")
    return float(out["step_ms"]["projected"]) / float(out["step_ms"]["now"])


@dataclass(frozen=True)
class Pair:
    """A folded run and the unfused runs measured just before and just after it."""

    before: Run
    folded: Run
    after: Run
    fraction: float  # projected / now, averaged over the two unfused profiles

    @property
    def now_ms(self) -> float:
        return (self.before.median_ms + self.after.median_ms) / 2

    @property
    def drift_pct(self) -> float:
        return abs(self.before.median_ms - self.after.median_ms) / self.now_ms * 100

    @property
    def projected_ms(self) -> float:
        return self.fraction * self.now_ms

    @property
    def error_pct(self) -> float:
        return abs(self.projected_ms - self.folded.median_ms) / self.folded.median_ms * 100

    def __str__(self) -> str:
        return (
            f"unfused {self.before.median_ms:.2f}/{self.after.median_ms:.2f} ms (drift "
            f"{self.drift_pct:.1f}%), projected {self.projected_ms:.2f}, folded "
            f"{self.folded.median_ms:.2f} ms: error {self.error_pct:.1f}%"
        )


def norm_pairs(work: Path) -> tuple[list[Pair], list[Pair]]:
    """(steady, drifted) pairs of `what-if --remove-category norm` on `infer --fuse none`
    against `infer --fuse bn`, measured A B A B A ... until STEADY_PAIRS are steady."""
    weights = plain_checkpoint(work)
    steady: list[Pair] = []
    drifted: list[Pair] = []
    with one_thread():
        before = _profile(weights, "none", work / "none0")
        fraction_before = _projected_fraction(before)
        for index in range(MAX_PAIRS):
            folded = _profile(weights, "bn", work / f"bn{index}")
            after = _profile(weights, "none", work / f"none{index + 1}")
            fraction_after = _projected_fraction(after)
            pair = Pair(before, folded, after, (fraction_before + fraction_after) / 2)
            (steady if pair.drift_pct <= DRIFT_PCT else drifted).append(pair)
            if len(steady) == STEADY_PAIRS:
                break
            before, fraction_before = after, fraction_after
    return steady, drifted


@pytest.mark.slow
def test_removing_norm_is_predicted_within_the_checked_bound(tmp_path: Path) -> None:
    check = CHECKED[("cpu", "norm")]
    steady, drifted = norm_pairs(tmp_path)
    seen = "\n".join(["steady:", *map(str, steady), "drifted:", *map(str, drifted)])
    if len(steady) < STEADY_PAIRS:
        pytest.fail(
            f"host too busy to check: {len(drifted)} of {MAX_PAIRS} folded runs saw the unfused "
            f"step drift more than {DRIFT_PCT:g}% around them; run again on a quieter machine\n"
            + seen,
            pytrace=False,
        )
    # The median pair: one pair caught in a slow spell on a shared machine does not decide.
    assert statistics.median(p.error_pct for p in steady) <= check.bound_pct, seen


def test_a_pair_reads_the_projection_against_the_bracketing_unfused_step() -> None:
    pair = Pair(Run("a", 40.0), Run("b", 37.0), Run("c", 42.0), fraction=0.9)
    assert pair.now_ms == 41.0
    assert pair.drift_pct == pytest.approx(2 / 41 * 100)
    assert pair.projected_ms == pytest.approx(36.9)
    assert pair.error_pct == pytest.approx(0.1 / 37 * 100)


def test_the_output_claims_only_what_a_test_checks() -> None:
    assert set(CHECKED) == {("cpu", "norm")}
    statement = CHECKED[("cpu", "norm")].statement("cpu", "norm")
    assert statement.startswith("checked on CPU: removing norm by folding BatchNorm")
    assert f"within {CHECKED[('cpu', 'norm')].bound_pct:g}%" in statement
    assert CHECKED[("cpu", "norm")].test == "tests/truth/" + Path(__file__).name
    assert NOT_CHECKED == "not checked against a measurement"
