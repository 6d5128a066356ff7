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

With `--rounds N` each mode is searched and gridded N times, and a last line sets the
search's agreement beside the grids' own: each search against the other rounds' grids, and
each grid's answer (the smallest of its equals) against the other rounds' grids. On a host
whose processes differ by several per cent, a plateau's equals move from one grid to the next,
so the grids' agreement with each other is the bar the search's is read against.

    python scripts/bench_tune.py [--modes infer,run] [--batch-max 32] [--imgsz 128]
                                 [--repeat 3] [--rounds N] [--override KEY=VALUE ...]
                                 [--keep DIR] [--no-rank]
"""

from __future__ import annotations

import argparse
import json
import statistics
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


def _answer_agrees(answer: list[int], full: Outcome) -> bool:
    """An answer was given and the grid agrees with each of its batches (`_agrees`)."""
    return bool(answer) and all(_agrees(b, full) for b in answer)


def _cross(answers: list[list[int]], grids: list[Outcome]) -> tuple[int, int]:
    """How many (answer, grid) pairs of different rounds agree, of how many: the host's noise
    as the grids themselves show it, beside the search's."""
    pairs = [
        (answer, full)
        for i, answer in enumerate(answers)
        for j, full in enumerate(grids)
        if i != j and answer
    ]
    return sum(_answer_agrees(answer, full) for answer, full in pairs), len(pairs)


def _summary(mode: str, rounds: list[tuple[Outcome, Outcome]]) -> list[str]:
    """Over several rounds: the median steps ratio and its spread, and agreement measured
    against the grids' own: each search against every other round's grid, and each grid's
    answer (the smallest of its equals) against every other round's grid."""
    ratios = sorted(found.steps / full.steps for found, full in rounds)
    grids = [full for _, full in rounds]
    own = sum(_answer_agrees(found.answer, full) for found, full in rounds)
    search, pairs = _cross([found.answer for found, _ in rounds], grids)
    grid, grid_pairs = _cross([full.answer[:1] for full in grids], grids)
    median = statistics.median(ratios)
    return [
        f"{mode}: steps ratio median {median:.2f} (spread {ratios[0]:.2f} to {ratios[-1]:.2f}; "
        f"{'MET' if median <= 0.5 else 'MISSED'}); the search agrees with its own round's grid "
        f"in {own} of {len(rounds)}, with the other rounds' grids in {search} of {pairs}; "
        f"each grid's answer agrees with the other rounds' grids in {grid} of {grid_pairs}"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="infer,run")
    parser.add_argument("--batch-max", type=int, default=32)
    parser.add_argument("--imgsz", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1, help="search and grid this many times")
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
    summaries: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench_tune_") as scratch:
        tmp = args.keep or scratch
        for mode in args.modes.split(","):
            common = [f"mode={mode}", "device=cpu", f"imgsz={args.imgsz}"]
            common += [f"window.repeat={args.repeat}", *WINDOWS[mode]]
            per_window = steps_per_window(mode, [*common, *args.override])  # the last counts
            rank = max(MIN_MEASURED, per_window // RANK_SHARE) if args.rank else 0
            common += [f"tune.rank_steps={rank}", *args.override]
            rounds = []
            for index in range(args.rounds):
                suffix = f"_{index + 1}" if args.rounds > 1 else ""
                folder, top = Path(tmp), args.batch_max
                found = search(folder / f"{mode}_search{suffix}", common, top, per_window)
                full = grid(folder / f"{mode}_grid{suffix}", common, top, per_window)
                rounds.append((found, full))
                lines.append(_line(mode, found, full))
                if found.contended or full.contended:
                    lines.append(
                        f"       {found.contended + full.contended} points measured on a busy "
                        "host: run again with nothing else running"
                    )
            if args.rounds > 1:
                summaries += _summary(mode, rounds)
    sys.stdout.write("\n".join([*lines, *summaries]) + "\n")


def _line(mode: str, found: Outcome, full: Outcome) -> str:
    agree = _answer_agrees(found.answer, full)
    ratio = found.steps / full.steps
    return (
        f"{mode:<6} | {found.points:>3} ({found.ranked} ranked) {found.windows:>7} "
        f"{found.steps:>5} {found.wall_s:>6.1f}s | {full.points:>5} {full.windows:>7} "
        f"{full.steps:>5} {full.wall_s:>6.1f}s | {found.answer} | {full.answer} | "
        f"{'yes' if agree else 'NO'} | {ratio:.2f} ({'MET' if ratio <= 0.5 else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
