"""The truth suite as one table: every scenario whose answer is known in advance, what we
expected, what the profiler said, the evidence, and pass/fail.

Scenarios (the same code the tests under tests/truth and tests/analysis run):
* planted bottlenecks measured end to end (input-, compute-, postprocess-, preprocess-bound),
  on the CPU by default or on CUDA with `--device 0` (scripts/gpu_check.sh does that);
* the verdicts on the four real GPU fixture traces (tests/fixtures/gpu_traces);
* compare's significance call: A/A false-positive rate and power on seeded trials, then real
  `--repeat 3` CPU runs (same config twice; imgsz 256 against 384);
* what-if against reality: predict removing `norm`, fold BatchNorm, measure (CPU);
* the profiler overhead each planted run measured on itself.

    python scripts/truth_report.py [--device cpu|0] [--only planted,gpu,compare,whatif]

Exit status 0 when every row passes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GPU_TRACES = ROOT / "tests" / "fixtures" / "gpu_traces"


@dataclass(frozen=True)
class Row:
    scenario: str
    expected: str
    got: str
    evidence: str
    ok: bool


def planted(work: Path, device: str) -> Iterator[Row]:
    from tests.truth.scenarios import SCENARIOS, run_scenario

    for i, scenario in enumerate(SCENARIOS):
        outcome = run_scenario(scenario, work / "inputs", work / f"planted{i}", device=device)
        overhead = (outcome.document or {}).get("metrics", {}).get("profiler_overhead_pct")
        evidence = outcome.evidence + (f", profiler_overhead_pct={overhead}" if overhead else "")
        problems = outcome.problems
        got = str(outcome.bound) + ("" if not problems else f" ({'; '.join(problems)})")
        yield Row(
            f"{scenario.name} [{device}]", scenario.expected(device), got, evidence, not problems
        )


def gpu_fixtures(work: Path, device: str) -> Iterator[Row]:
    from libreyolo.cli.sources import open_profile
    from tests.analysis.test_gpu_fixtures import EXPECTED

    if not GPU_TRACES.is_dir():
        yield Row("GPU fixture traces", "-", f"missing: {GPU_TRACES}", "-", False)
        return
    for name, util, _tc, _steps, _mode, bound in EXPECTED:
        profile = open_profile(str(GPU_TRACES / name))
        got = str(profile.metrics.get("bound"))
        evidence = f"gpu_util={profile.metrics.get('gpu_util')} (fixture {util})"
        yield Row(f"fixture {name.split('.')[0]}", bound, got, evidence, got == bound)


def compare_calls(work: Path, device: str) -> Iterator[Row]:
    from tests.analysis.test_compare_truth import ALPHA, MEAN, significant_rate

    for n in (2, 3, 5):
        rate = significant_rate(seed=1000 + n, n=n, mean_after=MEAN, noise=0.02)
        yield Row(
            f"compare A/A, n={n} a side, 1000 seeded cases",
            f"significant <= {ALPHA:.0%}",
            f"{rate:.1%} significant",
            "2 % noise, Welch t over 2*SE",
            rate <= ALPHA,
        )
    power = significant_rate(seed=2005, n=5, mean_after=1.1 * MEAN, noise=0.02)
    yield Row(
        "compare +10 %, n=5 a side, 1000 seeded cases",
        "significant >= 95%",
        f"{power:.1%} significant",
        "2 % noise",
        power >= 0.95,
    )
    from tests.truth.scenarios import one_thread, plain_checkpoint
    from tests.truth.test_compare_real import _compare, _measure

    weights = plain_checkpoint(work)
    with one_thread():
        a = _measure(weights, work / "cmp_a", 256)
        b = _measure(weights, work / "cmp_b", 256)
        c = _measure(weights, work / "cmp_c", 384)
    for label, after, expected in (("same config twice", b, False), ("imgsz 256 vs 384", c, True)):
        call = _compare(a, after)
        yield Row(
            f"compare CPU --repeat 3: {label}",
            "significant" if expected else "not significant",
            "significant" if call["significant"] else "not significant",
            f"{call['before']} -> {call['after']} img/s; {call['significance']}",
            call["significant"] is expected,
        )


def whatif(work: Path, device: str) -> Iterator[Row]:
    import statistics

    from libreyolo.analysis.whatif import CHECKED
    from tests.truth.test_whatif_truth import norm_pairs

    bound = CHECKED[("cpu", "norm")].bound_pct
    pairs, drifted = norm_pairs(work / "whatif")
    if not pairs:
        yield Row(
            "what-if remove norm vs infer --fuse bn [cpu]",
            f"median error <= {bound:g}%",
            f"host too busy: {len(drifted)} pairs drifted",
            "; ".join(map(str, drifted[:2])),
            False,
        )
        return
    median = statistics.median(p.error_pct for p in pairs)
    errors = ", ".join(f"{p.error_pct:.1f}%" for p in pairs)
    yield Row(
        "what-if remove norm vs infer --fuse bn [cpu]",
        f"median error <= {bound:g}%",
        f"median error {median:.1f}% ({errors}; {len(drifted)} drifted pairs left out)",
        str(pairs[len(pairs) // 2]),
        median <= bound,
    )


SECTIONS: dict[str, Callable[[Path, str], Iterator[Row]]] = {
    "planted": planted,
    "gpu": gpu_fixtures,
    "compare": compare_calls,
    "whatif": whatif,
}


def render(rows: list[Row]) -> str:
    header = ("scenario", "expected", "got", "key evidence", "result")
    cells = [header] + [
        (r.scenario, r.expected, r.got, r.evidence, "pass" if r.ok else "FAIL") for r in rows
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(4)]
    lines = ["  ".join(c[i].ljust(widths[i]) for i in range(4)) + "  " + c[4] for c in cells]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu, or a CUDA index for the planted runs")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    args = parser.parse_args()
    wanted = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(wanted) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; have {', '.join(SECTIONS)}")
    rows: list[Row] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="truth_") as tmp:
        for name in wanted:
            for row in SECTIONS[name](Path(tmp), args.device):
                rows.append(row)
                print(f"{'pass' if row.ok else 'FAIL'}  {row.scenario}", file=sys.stderr)
    print(render(rows))
    failed = sum(not r.ok for r in rows)
    elapsed = time.perf_counter() - started
    print(f"\n{len(rows) - failed} of {len(rows)} passed in {elapsed:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
