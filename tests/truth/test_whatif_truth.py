"""What-if against reality: the projection next to the change made real and measured.

`what-if --remove-category norm` on an unfused CPU profile projects the step without the
BatchNorm ops; `infer --fuse bn` folds exactly those BatchNorms into the convolutions (same
convolutions, same layout), so its measured step is the truth the projection is checked against.
The bound comes from libreyolo.analysis.whatif.CHECKED, the table the what-if output quotes, so the
output can never claim more accuracy than this test enforces.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import pytest

from libreyolo.analysis.whatif import CHECKED, NOT_CHECKED
from tests.conftest import invoke
from tests.quiet import invoke_quietly
from tests.truth.scenarios import one_thread, plain_checkpoint

# 15 traced iterations per profile; imgsz 192 keeps one pair of profiles at ~3 s on one core.
WINDOW = ["--device", "cpu", "--imgsz", "192", "--warmup", "3", "--runs", "30"]
PAIRS = 3  # unfused / bn-folded pairs, interleaved so slow spells on the machine hit both sides


def _profile(weights: Path, fuse: str, project: Path) -> str:
    argv = ["profile", "infer", "--weights", str(weights), *WINDOW, "--fuse", fuse]
    argv += ["--project", str(project), "--json"]
    result = invoke_quietly(argv, project / "infer" / "profile.json")
    assert result.status == 0, result.stderr
    return str(result.json()["profile"])  # type: ignore[index]


def _step_ms(path: str) -> float:
    result = invoke(["profile", "get", path, "step_ms"])
    assert result.status == 0, result.stderr
    return float(result.stdout)


@dataclass(frozen=True)
class Pair:
    """One projection from an unfused profile against the bn-folded profile measured next."""

    now_ms: float
    projected_ms: float
    measured_ms: float
    checked: str

    @property
    def error_pct(self) -> float:
        return abs(self.projected_ms - self.measured_ms) / self.measured_ms * 100

    def __str__(self) -> str:
        return (
            f"now {self.now_ms} projected {self.projected_ms} measured {self.measured_ms}: saving "
            f"predicted {self.now_ms - self.projected_ms:.2f} measured "
            f"{self.now_ms - self.measured_ms:.2f} ms"
        )


def norm_pairs(work: Path, pairs: int = PAIRS) -> list[Pair]:
    """`what-if --remove-category norm` on `infer --fuse none`, next to `infer --fuse bn`."""
    weights = plain_checkpoint(work)
    found = []
    with one_thread():
        for pair in range(pairs):
            unfused = _profile(weights, "none", work / f"none{pair}")
            folded = _profile(weights, "bn", work / f"bn{pair}")
            result = invoke(["profile", "what-if", unfused, "--remove-category", "norm", "--json"])
            assert result.status == 0, result.stderr
            out = result.json()
            assert isinstance(out, dict) and out["regime"] == "cpu"
            step = out["step_ms"]
            found.append(Pair(step["now"], step["projected"], _step_ms(folded), out["checked"]))
    return found


@pytest.mark.slow
def test_removing_norm_is_predicted_within_the_checked_bound(tmp_path: Path) -> None:
    check = CHECKED[("cpu", "norm")]
    attempts = []
    # The median pair: one pair caught in a slow spell on a shared machine does not decide. A
    # drifting VM can still move all three (seen in CI after the suite's busy-host tests: every
    # unfused run 30-50 % slower, with no run-queue wait or steal to show for it), so a failed
    # attempt is measured once more; a wrong projection rule fails both.
    for attempt in range(2):
        pairs = norm_pairs(tmp_path / f"attempt{attempt}")
        assert all(p.checked == check.statement("cpu", "norm") for p in pairs)
        attempts.append(pairs)
        if statistics.median(p.error_pct for p in pairs) <= check.bound_pct:
            return
    pytest.fail(
        "\n".join(f"attempt {i}: " + "; ".join(map(str, a)) for i, a in enumerate(attempts))
    )


def test_the_output_claims_only_what_a_test_checks() -> None:
    assert set(CHECKED) == {("cpu", "norm")}
    statement = CHECKED[("cpu", "norm")].statement("cpu", "norm")
    assert statement.startswith("checked on CPU: removing norm by folding BatchNorm")
    assert f"within {CHECKED[('cpu', 'norm')].bound_pct:g}%" in statement
    assert CHECKED[("cpu", "norm")].test == "tests/truth/" + Path(__file__).name
    assert NOT_CHECKED == "not checked against a measurement"
