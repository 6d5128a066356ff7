"""The knee search against the full power-of-two grid over the same range, side by side.

For each mode (inference, training) on the CPU: `libreyolo-sweep -m hydra/sweeper=tune
tune.goal=knee ...` and the grid `batch=1,2,4,...,batch_max` with the same window and trials,
each into a fresh folder. Prints the points and windows each measured, their wall times, the
search's answer, the grid's batches as good as its best (`analysis.tune.as_good_as_best`, the
same test) and whether the grid agrees (`_agrees`: the answer is one of them, or a batch the
grid never measured that lies between them and the grid batch below them). Target (issue
23): the same recommendation with at most half of the grid's measured windows; issue 45 counts
measured steps (windows × steps a window, warmup left out), so the search's ranking windows
(two short trials per new size; only the answer and the best measured again on the full
window) are credited for what they save.

    python scripts/bench_tune.py [--modes infer,run] [--batch-max 32] [--imgsz 128]
                                 [--repeat 3] [--override KEY=VALUE ...] [--keep DIR]
                                 [--no-rank]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from libreyolo.analysis.tune import Measured, as_good_as_best
from libreyolo.document.sweep_io import SWEEP_FILE, TUNE_FILE
from libreyolo.document.tune_model import TuneSettings
from libreyolo.measure.window import MIN_MEASURED

ROOT = Path(__file__).resolve().parents[1]
RANK_SHARE = 4  # the search's ranking window: a quarter of the window's steps (at least 2)
# Short windows: every point measures `repeat` trials of these.
WINDOWS = {
    "infer": ["window.warmup=2", "window.runs=10"],
    "run": ["window.warmup=1", "window.steps=8", "dataset.workers=0"],
}


def steps_per_window(mode: str, overrides: list[str]) -> int:
    """The measured steps (training) or runs (inference) one window takes, as composed."""
    key = "window.runs=" if mode == "infer" else "window.steps="
    return int([word for word in overrides if word.startswith(key)][-1].partition("=")[2])


@dataclass(frozen=True)
class Outcome:
    points: int  # measured (not reused)
    wall_s: float
    answer: list[int]  # the search's recommendation, or the grid's batches as good as its best
    contended: int  # points measured on a busy host
    measured: tuple[int, ...] = ()  # the grid's batches
    windows: int = 0  # trial windows measured
    steps: int = 0  # measured steps (runs) of those windows
    ranked: int = 0  # points measured on the search's ranking window


def _sweep(folder: Path, overrides: list[str]) -> float:
    argv = [sys.executable, "-m", "libreyolo.sweep", "-m", *overrides]
    argv.append(f"hydra.sweep.dir={folder}")
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"exit {done.returncode}: {' '.join(argv)}\n{done.stderr[-2000:]}")
    return wall


def _rows(folder: Path) -> dict[str, dict[str, Any]]:
    record = json.loads((folder / SWEEP_FILE).read_text(encoding="utf-8"))
    points: dict[str, dict[str, Any]] = record["points"]
    return points


def _contended(folder: Path) -> int:
    return sum(1 for row in _rows(folder).values() if (row.get("metrics") or {}).get("contended"))


def _trials(folder: Path, row: dict[str, Any]) -> tuple[float, ...]:
    profile = json.loads((folder / str(row["profile"])).read_text(encoding="utf-8"))
    return tuple(float(t["metrics"]["img_per_s"]) for t in profile["trials"])


def search(folder: Path, common: list[str], batch_max: int, per_window: int) -> Outcome:
    """The knee search; its windows and steps from tune.json's path: each step's trials, on
    the ranking window's steps where it was ranked (`tune_series.rank_window`)."""
    overrides = ["hydra/sweeper=tune", "tune.goal=knee", f"tune.batch_max={batch_max}", *common]
    wall = _sweep(folder, overrides)
    record = json.loads((folder / TUNE_FILE).read_text(encoding="utf-8"))
    rank_steps = int(record["settings"].get("rank_steps") or 0)
    path = [step for s in record["series"] for step in s["path"] if not step["reused"]]
    windows = sum(int(step["trials"]) for step in path)
    steps = sum(
        int(step["trials"]) * (rank_steps if step.get("ranked") else per_window) for step in path
    )
    ranked = sum(1 for step in path if step.get("ranked"))
    answer = [int(r["batch"]) for r in record["recommended"]]
    return Outcome(len(path), wall, answer, _contended(folder), (), windows, steps, ranked)


def grid(folder: Path, common: list[str], batch_max: int, per_window: int) -> Outcome:
    batches = [1 << i for i in range(batch_max.bit_length()) if 1 << i <= batch_max]
    wall = _sweep(folder, [f"batch={','.join(map(str, batches))}", *common])
    measured = [
        Measured(name, int(row["batch"]), True, trials=_trials(folder, row))
        for name, row in _rows(folder).items()
        if row["status"] == "ok"
    ]
    equals = as_good_as_best(TuneSettings(), measured)
    windows = sum(len(m.trials) for m in measured)
    steps = windows * per_window
    return Outcome(len(batches), wall, equals, _contended(folder), tuple(batches), windows, steps)


def _agrees(answer: int, full: Outcome) -> bool:
    """The grid does not contradict the answer: one of its batches as good as its best, or,
    for a batch the grid never measured (a refinement's 24), inside (the largest grid batch
    below those, the largest of those]."""
    if answer in full.answer or not full.answer:
        return answer in full.answer
    below = [b for b in full.measured if b < min(full.answer)]
    return (max(below) if below else 0) < answer <= max(full.answer) and answer not in full.measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="infer,run")
    parser.add_argument("--batch-max", type=int, default=32)
    parser.add_argument("--imgsz", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--keep", type=Path, help="measure into this folder and keep it")
    parser.add_argument(
        "--no-rank", dest="rank", action="store_false", help="search on full windows only"
    )
    args = parser.parse_args()
    header = (
        "mode   | search: points windows steps wall | grid: points windows steps wall | "
        "answer | grid's equals | agree | steps ratio"
    )
    lines = [header, "-" * len(header)]
    with tempfile.TemporaryDirectory(prefix="bench_tune_") as scratch:
        tmp = args.keep or scratch
        for mode in args.modes.split(","):
            common = [f"mode={mode}", "device=cpu", f"imgsz={args.imgsz}"]
            common += [f"window.repeat={args.repeat}", *WINDOWS[mode]]
            per_window = steps_per_window(mode, [*common, *args.override])  # the last counts
            rank = max(MIN_MEASURED, per_window // RANK_SHARE) if args.rank else 0
            common += [f"tune.rank_steps={rank}", *args.override]
            found = search(Path(tmp) / f"{mode}_search", common, args.batch_max, per_window)
            full = grid(Path(tmp) / f"{mode}_grid", common, args.batch_max, per_window)
            agree = bool(found.answer) and all(_agrees(b, full) for b in found.answer)
            ratio = found.steps / full.steps
            lines.append(
                f"{mode:<6} | {found.points:>3} ({found.ranked} ranked) {found.windows:>7} "
                f"{found.steps:>5} {found.wall_s:>6.1f}s | {full.points:>5} {full.windows:>7} "
                f"{full.steps:>5} {full.wall_s:>6.1f}s | {found.answer} | {full.answer} | "
                f"{'yes' if agree else 'NO'} | {ratio:.2f} ({'MET' if ratio <= 0.5 else 'MISSED'})"
            )
            if found.contended or full.contended:
                lines.append(
                    f"       {found.contended + full.contended} points measured on a busy host: "
                    "run again with nothing else running"
                )
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
