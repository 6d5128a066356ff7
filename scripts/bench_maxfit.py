"""The maxfit search under a memory budget, guided by the memory prediction, against the
doubling-and-bisection it replaces, on CPU training. The probe steps' prior (before the first
point) is printed with the path; it is not a measured point.

Runs `libreyolo-sweep -m hydra/sweeper=tune tune.goal=maxfit tune.memory_budget_mb=B` once and
reads `tune.json`: the batches it measured, whether each fit, and the answer. Fitting is
monotone in the batch, so the search it replaces (the same `analysis.tune.decide` with no
prediction) would measure a path fixed by where the boundary lies: it is replayed against the
boundary the real search found (the answer fits, the next multiple of `tune.batch_step` does
not). Target (issue 45): the same answer in at most 3 measured points.

    python scripts/bench_maxfit.py [--budget-mb 2600] [--imgsz 320] [--batch-max 64]
                                   [--batch-step 4]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from libreyolo.analysis.tune import Done, Measured, Next, decide
from libreyolo.document.sweep_io import TUNE_FILE
from libreyolo.document.tune_model import TuneSettings

ROOT = Path(__file__).resolve().parents[1]
TARGET_POINTS = 3


def replayed(settings: TuneSettings, fits_up_to: int) -> list[int]:
    """The batches the unguided search measures when exactly the batches up to `fits_up_to`
    fit (no point carries a prediction)."""
    measured: list[Measured] = []
    while True:
        step = decide(settings, measured)
        if isinstance(step, Done):
            return [m.batch for m in measured]
        assert isinstance(step, Next)
        fits = step.batch <= fits_up_to
        trials = (1.0, 1.0, 1.0) if fits else ()
        measured.append(Measured(f"b{step.batch}", step.batch, fits, trials=trials))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget-mb", type=float, default=2600.0)
    parser.add_argument("--imgsz", type=int, default=320)
    parser.add_argument("--batch-max", type=int, default=64)
    parser.add_argument("--batch-step", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-maxfit-") as tmp:
        argv = [sys.executable, "-m", "libreyolo.sweep", "-m", "hydra/sweeper=tune"]
        argv += ["tune.goal=maxfit", f"tune.memory_budget_mb={args.budget_mb}"]
        argv += [f"tune.batch_max={args.batch_max}", f"tune.batch_step={args.batch_step}"]
        argv += ["mode=run", "device=cpu", f"imgsz={args.imgsz}", "window.warmup=1"]
        argv += ["window.steps=2", "dataset.workers=0", f"hydra.sweep.dir={tmp}"]
        started = time.perf_counter()
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
        wall_s = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"exit {done.returncode}: {' '.join(argv)}\n{done.stderr[-2000:]}")
        record = json.loads((Path(tmp) / TUNE_FILE).read_text(encoding="utf-8"))
    (series,) = record["series"]
    path = [(int(s["batch"]), bool(s["fits"]), s.get("peak_mb")) for s in series["path"]]
    answer = series["batch"]
    settings = TuneSettings(goal="maxfit", batch_max=args.batch_max, batch_step=args.batch_step)
    old = replayed(settings, answer if answer is not None else 0)
    print(f"budget {args.budget_mb:g} MB of peak RSS, imgsz {args.imgsz}, {wall_s:.0f} s")
    prior = series.get("prior")
    if prior is not None:
        print(
            f"  prior: batch {prior['batch']} predicted at {prior['predicted_mb']:.0f} MB "
            f"(probe steps anchored at {prior['anchor_mb']:.0f} MB, {prior['probe_s']:.0f} s)"
        )
    for batch, fits, peak in path:
        peak_text = "-" if peak is None else f"{peak:.0f} MB"
        print(f"  batch {batch:>3}  {'fits' if fits else 'does not fit':<13} peak {peak_text}")
    print(f"answer: batch {answer} ({series['stopped']}: {series['why']})")
    print(
        f"guided: {len(path)} points; doubling and bisection to the same boundary: "
        f"{len(old)} points {old}"
    )
    ok = answer is not None and len(path) <= TARGET_POINTS
    print("PASS" if ok else "FAIL", f"(target: the answer in at most {TARGET_POINTS} points)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
