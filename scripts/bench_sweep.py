"""What a sweep costs beyond its measurements: a 4-point CPU infer sweep (batch 1,2 x imgsz
64,96, warmup 1, runs 2) run isolated (a child process per point) and in-process, alternating
in one run. Per point, overhead = point_s - window_s from its status.json: everything but the
warmup and measured iterations (process start, imports, config, lease, model build, analysis,
saving). Printed beside it: point_s - measure_s, the part outside `measure_config`.

Targets: mean per-point overhead ≤ 3 s isolated, ≤ 0.5 s in-process. The first point of a sweep
also pays the one-time imports (torch, torchvision: ~3 s here); it is printed on its own.

    python scripts/bench_sweep.py [--rounds 1] [--batch 1,2] [--imgsz 64,96] [--keep DIR]
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

CHECKPOINT = fixture_file(YOLO9T)
TARGETS_S = {"isolated": 3.0, "in-process": 0.5}  # mean per-point overhead


def run_sweep(sweep_dir: Path, isolate: bool, weights: str, args: argparse.Namespace) -> float:
    """Run one sweep into `sweep_dir`; its wall seconds."""
    argv = [
        sys.executable,
        "-m",
        "libreyolo.sweep",
        "-m",
        "mode=infer",
        "device=cpu",
        "window.warmup=1",
        f"window.runs={args.runs}",
        "trace=false",
        f"model.weights={weights}",
        f"hydra.sweep.dir={sweep_dir}",
        f"batch={args.batch}",
        f"imgsz={args.imgsz}",
        f"sweep.isolate={str(isolate).lower()}",
    ]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"sweep failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return wall


def overheads(sweep_dir: Path) -> dict[str, tuple[float, float]]:
    """Per point, in the order they ran: (point_s - window_s, point_s - measure_s), seconds."""
    found = []
    for path in sweep_dir.glob("*/status.json"):
        status = json.loads(path.read_text(encoding="utf-8"))
        point_s = status["point_s"]
        found.append(
            (
                status["lease_acquired_at"],
                path.parent.name,
                (point_s - status["window_s"], point_s - status["measure_s"]),
            )
        )
    return {name: value for _, name, value in sorted(found)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--batch", default="1,2")
    parser.add_argument("--imgsz", default="64,96")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="leave the sweep folders here")
    args = parser.parse_args()
    weights = str(CHECKPOINT)
    rows: dict[str, dict[str, list[tuple[float, float]]]] = {mode: {} for mode in TARGETS_S}
    walls: dict[str, list[float]] = {mode: [] for mode in TARGETS_S}
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        for round_ in range(args.rounds):  # alternate, so drift on a noisy machine hits both
            for mode in TARGETS_S:
                sweep_dir = base / f"r{round_}_{mode}"
                walls[mode].append(run_sweep(sweep_dir, mode == "isolated", weights, args))
                for name, value in overheads(sweep_dir).items():
                    rows[mode].setdefault(name, []).append(value)
    print(
        f"sweep overhead per point, infer on CPU, batch {args.batch} x imgsz {args.imgsz}, "
        f"runs {args.runs}, {args.rounds} round(s), weights: the fixture checkpoint"
    )
    print("  overhead = point wall - its measurement windows; [outside measure_config]")
    names = sorted({n for mode in rows.values() for n in mode})
    print(f"  {'point':<14}" + "".join(f"{mode:>24}" for mode in TARGETS_S))
    for name in names:
        cells = ""
        for mode in TARGETS_S:
            values = rows[mode].get(name, [(float("nan"), float("nan"))])
            total = statistics.median(v[0] for v in values)
            outside = statistics.median(v[1] for v in values)
            cells += f"{total:13.2f}s [{outside:5.2f}s]"
        print(f"  {name:<14}{cells}")
    # The first point also pays what a sweep pays once (torch and torchvision imported, by the
    # fork server or by this process); the target is per point, so it applies to the others.
    for mode, target in TARGETS_S.items():
        order = list(rows[mode])
        first = statistics.median(v[0] for v in rows[mode][order[0]])
        later = [v[0] for name in order[1:] for v in rows[mode][name]]
        mean, peak = statistics.mean(later), max(later)
        verdict = "PASS" if mean <= target else "FAIL"
        print(
            f"  {mode:<11} per point {mean:5.2f} s (max {peak:5.2f} s)  target ≤ {target} s: "
            f"{verdict}  | first point {first:5.2f} s incl. one-time imports; sweep wall "
            f"{statistics.median(walls[mode]):.1f} s"
        )


if __name__ == "__main__":
    main()
