"""What a sweep costs beyond its measurements: a 4-point CPU infer sweep (batch 1,2 x imgsz
64,96, warmup 1, runs 2) run isolated (a child process per point) and in-process, alternating
in one run. Per point, overhead = point_s - measure_s from its status.json: process start,
imports, model load, lease and bookkeeping, everything but the measurement itself.

Targets: mean per-point overhead ≤ 3 s isolated, ≤ 0.5 s in-process.

    python scripts/bench_sweep.py [--rounds 1] [--batch 1,2] [--imgsz 64,96] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINT = ROOT.parent / "shared/fixtures/libreyolo_v1_checkpoints/LibreYOLO9t_nc80_seed0.pt"
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
    env = dict(os.environ, LIBREYOLO_SWEEP_ISOLATE="1" if isolate else "0")  # older app.py
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, cwd=ROOT)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"sweep failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return wall


def overheads(sweep_dir: Path, wall: float) -> tuple[dict[str, float], bool]:
    """Per point: point_s - measure_s; (values, exact). Without those keys in status.json, the
    fallback is wall / points - the measured window's time (runs x step_ms from the profile)."""
    statuses = {
        p.parent.name: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(sweep_dir.glob("*/status.json"))
    }
    if all(
        s.get("point_s") is not None and s.get("measure_s") is not None for s in statuses.values()
    ):
        return {name: s["point_s"] - s["measure_s"] for name, s in statuses.items()}, True
    out = {}
    for name, status in statuses.items():
        profile = json.loads((sweep_dir / name / status["profile"]).read_text(encoding="utf-8"))
        window = profile.get("window", {})
        steps = (window.get("warmup") or 0) + (window.get("runs") or window.get("steps") or 0)
        out[name] = wall / len(statuses) - steps * profile["metrics"]["step_ms"] / 1000
    return out, False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--batch", default="1,2")
    parser.add_argument("--imgsz", default="64,96")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="leave the sweep folders here")
    args = parser.parse_args()
    weights = str(CHECKPOINT) if CHECKPOINT.is_file() else "LibreYOLO9t.pt"  # absent: random
    rows: dict[str, dict[str, list[float]]] = {mode: {} for mode in TARGETS_S}
    walls: dict[str, list[float]] = {mode: [] for mode in TARGETS_S}
    exact = True
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        for round_ in range(args.rounds):  # alternate, so drift on a noisy machine hits both
            for mode in TARGETS_S:
                sweep_dir = base / f"r{round_}_{mode}"
                wall = run_sweep(sweep_dir, mode == "isolated", weights, args)
                values, ok = overheads(sweep_dir, wall)
                exact &= ok
                walls[mode].append(wall)
                for name, value in values.items():
                    rows[mode].setdefault(name, []).append(value)
    print(
        f"sweep overhead per point, infer on CPU, batch {args.batch} x imgsz {args.imgsz}, "
        f"runs {args.runs}, {args.rounds} round(s), weights "
        f"{'fixture checkpoint' if weights == str(CHECKPOINT) else 'random'}"
    )
    if not exact:
        print("  note: status.json has no point_s/measure_s: overhead = wall/points - window time")
    names = sorted({n for mode in rows.values() for n in mode})
    print(f"  {'point':<14}" + "".join(f"{mode:>14}" for mode in TARGETS_S))
    for name in names:
        cells = "".join(
            f"{statistics.median(rows[m].get(name, [float('nan')])):13.2f}s" for m in TARGETS_S
        )
        print(f"  {name:<14}{cells}")
    for mode, target in TARGETS_S.items():
        values = [v for per_point in rows[mode].values() for v in per_point]
        mean, peak = statistics.mean(values), max(values)
        verdict = "PASS" if mean <= target else "FAIL"
        print(
            f"  {mode:<11} mean {mean:5.2f} s  max {peak:5.2f} s  (sweep wall "
            f"{statistics.median(walls[mode]):.1f} s)  target mean ≤ {target} s: {verdict}"
        )


if __name__ == "__main__":
    main()
