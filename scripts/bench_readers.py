"""Cold-start wall time and peak RSS of `libreyolo profile get` and `summary` on a profile.json.

Each command runs in a fresh process, several times, side by side with the bare interpreter
start-up (`python -c pass`) so the figures can be read against this machine's floor. Targets
(issue 2): ≤ 0.10 s and ≤ 40 MB for `get` and `summary` on a profile.json.

Then the floor of issue 27: a bare `python -I` that imports msgspec and decodes the same file,
run alternated with `get <profile> step_ms` and `summary <profile>` (one of each per round, so
a noisy moment hits all three); the medians' ratios to it are held to ≤ 1.3x (`get`) and
≤ 1.5x (`summary`).

    python scripts/bench_readers.py [--runs 9] [--profile PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT / "tests" / "fixtures" / "gpu_traces" / "hta_a100_ddp_train_3steps.json.gz"
TARGET_S, TARGET_MB = 0.10, 40.0
# Issue 27: each reader's median cold start over the floor's, on the same file.
FLOOR_RATIO_TARGETS = {"get step_ms": 1.3, "summary": 1.5}
FLOOR_CODE = "import msgspec, sys; msgspec.json.decode(open(sys.argv[1], 'rb').read())"


# Installed packages run from cached bytecode; a PYTHONDONTWRITEBYTECODE environment (as on
# this workplace's machines) would make every cold start recompile every module instead.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measure(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of one child process."""
    start = time.perf_counter()
    # close_fds=False lets subprocess use posix_spawn (vfork): a forked child would start with
    # this process's pages and report them as its own peak RSS.
    child = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, close_fds=False, env=CHILD_ENV
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}: {child.stderr.read().decode()}")
    return wall, usage.ru_maxrss / 1024


def build_profile(trace: Path, folder: Path) -> Path:
    """A v2 profile.json made from a real GPU trace, in a child process (keeps this one small)."""
    target = folder / "profile.json"
    code = (
        "import sys\n"
        "from libreyolo import __version__\n"
        "from libreyolo.analysis.build import profile_from_trace\n"
        "from libreyolo.document.files import save\n"
        "from libreyolo.kineto import analyse_trace\n"
        "profile = profile_from_trace(analyse_trace(sys.argv[1]), trace_path='profile_trace.json',"
        " created=None, version=__version__)\n"
        "save(profile, sys.argv[2])\n"
    )
    subprocess.run([sys.executable, "-c", code, str(trace), str(target)], check=True, cwd=ROOT)
    return target


def against_floor(path: Path, runs: int) -> None:
    """Print the floor and both readers' medians over `runs` alternated rounds, with the
    ratios to the floor against their targets."""
    reader = [sys.executable, "-m", "libreyolo", "profile"]
    cases = {
        "floor (python -I, msgspec)": [sys.executable, "-I", "-c", FLOOR_CODE, str(path)],
        "get step_ms": [*reader, "get", str(path), "step_ms"],
        "summary": [*reader, "summary", str(path)],
    }
    for argv in cases.values():
        measure(argv)  # warm-up: bytecode caches written
    walls: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(runs):
        for label, argv in cases.items():
            walls[label].append(measure(argv)[0])
    floor = statistics.median(walls[next(iter(cases))])
    print(f"against the floor, {runs} alternated rounds (median; min-max):")
    for label, samples in walls.items():
        wall = statistics.median(samples)
        target = FLOOR_RATIO_TARGETS.get(label)
        verdict = (
            ""
            if target is None
            else f"  {wall / floor:4.2f}x floor, target ≤ {target:.1f}x: "
            f"{'met' if wall / floor <= target else 'MISSED'}"
        )
        print(
            f"{label:<28} {wall * 1000:6.1f} ms ({min(samples) * 1000:5.1f}-"
            f"{max(samples) * 1000:5.1f}){verdict}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--profile", type=Path, help="an existing profile.json to read")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.profile or build_profile(DEFAULT_TRACE, Path(tmp))
        cases = {
            "python -c pass (floor)": [sys.executable, "-c", "pass"],
            "get gpu_util": [
                sys.executable,
                "-m",
                "libreyolo",
                "profile",
                "get",
                str(path),
                "gpu_util",
            ],
            "summary": [sys.executable, "-m", "libreyolo", "profile", "summary", str(path)],
            "summary --json": [
                sys.executable,
                "-m",
                "libreyolo",
                "profile",
                "summary",
                str(path),
                "--json",
            ],
        }
        print(f"profile: {path} ({path.stat().st_size / 1e3:.0f} kB), {args.runs} runs each")
        floor = None
        for label, argv in cases.items():
            measure(argv)  # warm-up: writes the bytecode cache, as an installed package has
            runs = [measure(argv) for _ in range(args.runs)]
            wall = statistics.median(r[0] for r in runs)
            rss = max(r[1] for r in runs)
            floor = floor or wall
            verdict = (
                ""
                if label.startswith("python")
                else (
                    f"  target ≤ {TARGET_S:.2f} s / {TARGET_MB:.0f} MB: "
                    f"{'met' if wall <= TARGET_S and rss <= TARGET_MB else 'MISSED'}"
                )
            )
            print(
                f"{label:<24} median {wall * 1000:6.1f} ms ({wall / floor:4.1f}x floor)  "
                f"peak RSS {rss:5.1f} MB{verdict}"
            )
        against_floor(path, args.runs)


if __name__ == "__main__":
    main()
