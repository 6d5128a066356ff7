"""What a fresh process per `--repeat` trial costs: the wall time of `libreyolo profile infer
--repeat N` (and `profile run` on the synthetic set) with each trial in a fresh process (the
default) against `--repeat-in-process`, alternating, each command a new CLI process; the extra
seconds per trial, and whether the trials' img/s moved.

No target: the README states the cost measured here.

    python scripts/bench_trials.py [--rounds 3] [--repeat 3] [--mode infer|run|both]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixture_files import YOLO9T, fixture_file  # noqa: E402

CHECKPOINT = str(fixture_file(YOLO9T))
COMMANDS = {
    "infer": ["infer", "--runs", "20", "--warmup", "3", "--imgsz", "320"],
    "run": ["run", "synthetic", "--batch", "2", "--imgsz", "128", "--steps", "6", "--warmup", "2",
            "--workers", "0"],
}  # fmt: skip


def _once(mode: str, repeat: int, in_process: bool, project: Path) -> tuple[float, float]:
    """(wall seconds, mean img/s) of one CLI command."""
    argv = [sys.executable, "-m", "libreyolo", "profile", *COMMANDS[mode], "--device", "cpu"]
    argv += ["--weights", CHECKPOINT, "--repeat", str(repeat), "--project", str(project)]
    argv += ["--json", *(["--repeat-in-process"] if in_process else [])]
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    wall_s = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    return wall_s, float(result["img_per_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mode", choices=["infer", "run", "both"], default="both")
    args = parser.parse_args()
    modes = ["infer", "run"] if args.mode == "both" else [args.mode]
    with tempfile.TemporaryDirectory() as scratch:
        for mode in modes:
            fresh: list[float] = []
            shared: list[float] = []
            fresh_ips: list[float] = []
            shared_ips: list[float] = []
            for i in range(args.rounds):
                for in_process in (i % 2 == 1, i % 2 == 0):  # alternate which goes first
                    wall_s, ips = _once(mode, args.repeat, in_process, Path(scratch) / mode)
                    (shared if in_process else fresh).append(wall_s)
                    (shared_ips if in_process else fresh_ips).append(ips)
            extra_s = (statistics.median(fresh) - statistics.median(shared)) / args.repeat
            print(
                f"{mode} --repeat {args.repeat}, {args.rounds} rounds: fresh processes "
                f"{statistics.median(fresh):.1f} s (spread {min(fresh):.1f}-{max(fresh):.1f}), "
                f"in one process {statistics.median(shared):.1f} s (spread "
                f"{min(shared):.1f}-{max(shared):.1f}); +{extra_s:.2f} s per trial; img/s "
                f"{statistics.median(fresh_ips):.2f} vs {statistics.median(shared_ips):.2f}"
            )


if __name__ == "__main__":
    main()
