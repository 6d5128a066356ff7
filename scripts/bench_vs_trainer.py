"""`profile run --trainer` beside libreyolo 1.x's own trainer, timed without it: img/s and phase
shares per batch, side by side on this machine.

For each family, image size and batch, in alternated rounds: 1.x's `libreyolo train` timed
per step by `scripts/v1_step_timer.py` (its own process, its files unedited, no profiler), then
`libreyolo profile run --trainer` with the same words. Both skip the same warmup steps; the
reference's img/s is the batch over its mean step, the profile's its own `img_per_s` (the mean
unsynced step, the bare ones for training). The table prints both sides' median img/s, the
median of the rounds' ratios (each round runs the two back to back, so the ratio cancels the
host's drift between rounds) and each side's phase shares (dataload, forward with the loss,
backward, optimizer with EMA, of the step); the target is that ratio within ±5 % and shares
within 5 points, and the same best batch (highest median img/s) on both sides. `--builtin`
holds this package's own step (`profile run` without `--trainer`) to the trainer instead: within
±15 % and 15 points (issue 42). libreyolo 1.6.0 lives in its own environment (never a
dependency):

    python3 -m venv .venv-v1 && .venv-v1/bin/pip install torch==2.14.1 \\
        torchvision==0.29.1 libreyolo==1.6.0
    python scripts/bench_vs_trainer.py --v1 .venv-v1/bin/python --batches 1,4,16 --rounds 3

`--keep-freed-memory` runs both sides with glibc told never to return freed memory to the kernel
(`MALLOC_MMAP_MAX_=0`, a trim threshold of 64 GiB): a control for the host's page-fault cost,
which at YOLOv9-t 320 px batch 32 is half of either side's step and drifts 2x between runs.

Weights: YOLOv9-t from the 1.6.0 checkpoint fixture, YOLOX-s built by 1.x from its name; both
with `pretrained=false` (no download; a step costs the same with any weights). Data: the
built-in synthetic set, drawn big enough for the largest batch's window.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from libreyolo.workload.data.synthetic import make_synthetic, train_images_for
from tests.fixture_files import YOLO9T, fixture_file

TIMER = Path(__file__).resolve().parent / "v1_step_timer.py"
PHASES = ("dataload", "forward", "backward", "optimizer")
FAMILIES = {"yolo9t": lambda: str(fixture_file(YOLO9T)), "yoloxs": lambda: "yolox-s"}
BUILTIN_NAMES = {"yolox-s": "LibreYOLOXs.pt"}
# glibc: no mmap'd blocks (each >32 MB tensor would be unmapped at its free and faulted in again
# at the next step) and no trimming of the heap's top
KEEP_FREED_MEMORY = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(64 << 30)}


def _words(data: Path, weights: str, batch: int, imgsz: int) -> list[str]:
    return [
        f"data={data}", f"model={weights}", f"batch={batch}", f"imgsz={imgsz}", "device=cpu",
        "workers=0", "amp=True", "pretrained=false",
    ]  # fmt: skip


def _reference(python: str, words: list[str], steps: int, warmup: int, threads: int) -> dict:
    """1.x's trainer timed per step: img/s and phase shares of the steps after warmup."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "steps.json"
        argv = [python, str(TIMER), str(out), str(warmup + steps), "--", *words,
                f"project={tmp}/run"]  # fmt: skip
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        subprocess.run(argv, check=True, capture_output=True, env=env, cwd=tmp)
        timed = json.loads(out.read_text())
    walls = timed["wall_ms"][warmup - 1 :]
    phases = timed["phase_ms"][warmup - 1 :]
    batch = int(next(w for w in words if w.startswith("batch=")).split("=")[1])
    step = statistics.fmean(walls)
    shares = {name: statistics.fmean(p.get(name, 0.0) for p in phases) / step for name in PHASES}
    # backward is what the timed calls leave of the step (with the loss's .item(), the
    # scheduler and the progress bar: a few milliseconds the reference cannot tell apart)
    shares["backward"] = 1.0 - sum(v for k, v in shares.items() if k != "backward")
    return {"img_per_s": batch * 1000.0 / step, "shares": shares}


def _profiled(
    python: str, words: list[str], steps: int, warmup: int, threads: int, *, builtin: bool
) -> dict:
    """`profile run --trainer` (or, `builtin`, this package's own step: no `--trainer`) with
    the same settings: its img/s and synced phase shares."""
    settings = dict(w.split("=", 1) for w in words)
    trainer = [] if builtin else ["--trainer", python, "--train-arg", "pretrained=false"]
    if builtin:  # 1.x's name for a model it builds; ours, random init, costs the same
        settings["model"] = BUILTIN_NAMES.get(settings["model"], settings["model"])
    with tempfile.TemporaryDirectory() as tmp:
        argv = [
            sys.executable, "-m", "libreyolo", "profile", "run", settings["data"], *trainer,
            "--weights", settings["model"], "--batch", settings["batch"],
            "--imgsz", settings["imgsz"], "--device", "cpu", "--workers", "0",
            "--warmup", str(warmup), "--steps", str(steps), "--threads", str(threads),
            "--project", tmp, "--json",
        ]  # fmt: skip
        subprocess.run(argv, check=True, capture_output=True)
        profile = json.loads((Path(tmp) / "run" / "profile.json").read_text())
    synced = [s for s in profile["samples"]["steps"] if s["synced"]]
    walls = [sum(s["phase_ms"].values()) for s in synced]
    step = statistics.fmean(walls)
    shares = {
        name: statistics.fmean(s["phase_ms"].get(name, 0.0) for s in synced) / step
        for name in PHASES
    }
    # the reference's dataload includes the copy to the device: so does ours (a share too)
    shares["dataload"] += (
        statistics.fmean(s["phase_ms"].get("to_device", 0.0) for s in synced) / step
    )
    return {"img_per_s": profile["metrics"]["img_per_s"], "shares": shares}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--v1", required=True, help="the libreyolo 1.x environment's python")
    parser.add_argument("--families", default="yolo9t,yoloxs")
    parser.add_argument("--imgsz", default="160,320")
    parser.add_argument("--batches", default="1,2,4,8,16,32")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--builtin",
        action="store_true",
        help="hold this package's own step (no --trainer) to the trainer: ±15 %% and 15 points",
    )
    parser.add_argument(
        "--keep-freed-memory",
        action="store_true",
        help="both sides with glibc keeping freed memory (no per-step page faults): a control",
    )
    args = parser.parse_args()
    if args.keep_freed_memory:  # inherited by both sides' processes and their children
        os.environ.update(KEEP_FREED_MEMORY)
    # --trainer adds only the probe's overhead; the built-in step is another implementation
    ratio_bound, share_bound = (0.15, 15.0) if args.builtin else (0.05, 5.0)
    batches = [int(b) for b in args.batches.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        # the probe's window: warmup + steps + bare (half the steps) batches in one epoch
        needed = args.warmup + args.steps + args.steps // 2 + 2
        data = make_synthetic(Path(tmp), num_train=train_images_for(needed, max(batches)))
        print("family  imgsz  batch  trainer img/s  profile img/s  ratio   shares (dl/fw/bw/opt)")
        failures = 0
        for family in args.families.split(","):
            weights = FAMILIES[family]()
            for imgsz in (int(s) for s in args.imgsz.split(",")):
                best: dict[str, tuple[float, int]] = {}  # side: (median img/s, batch)
                for batch in batches:
                    words = _words(data, weights, batch, imgsz)
                    refs, profs = [], []
                    for index in range(args.rounds):  # alternated: both see the same host
                        common = (args.v1, words, args.steps, args.warmup, args.threads)
                        refs.append(_reference(*common))
                        profs.append(_profiled(*common, builtin=args.builtin))
                        # each round as it ends (stderr): a run stopped by a time limit keeps them
                        print(
                            f"{family} {imgsz} b{batch} round {index + 1}: "
                            f"{refs[-1]['img_per_s']:.2f} vs {profs[-1]['img_per_s']:.2f} img/s",
                            file=sys.stderr,
                            flush=True,
                        )
                    ref = statistics.median(r["img_per_s"] for r in refs)
                    prof = statistics.median(p["img_per_s"] for p in profs)
                    # each round pairs the two runs back to back: its ratio cancels the host's
                    # drift between rounds, and the median of those ratios is the figure judged
                    ratio = statistics.median(
                        p["img_per_s"] / r["img_per_s"] for r, p in zip(refs, profs, strict=True)
                    )
                    for side, value in (("trainer", ref), ("profile", prof)):
                        best[side] = max(best.get(side, (0.0, 0)), (value, batch))
                    ref_shares = {
                        k: statistics.median(r["shares"][k] for r in refs) for k in PHASES
                    }
                    prof_shares = {
                        k: statistics.median(p["shares"][k] for p in profs) for k in PHASES
                    }
                    worst = max(abs(ref_shares[k] - prof_shares[k]) for k in PHASES) * 100
                    ok = abs(ratio - 1) <= ratio_bound and worst <= share_bound
                    failures += not ok
                    shares = "/".join(f"{ref_shares[k] * 100:.0f}" for k in PHASES)
                    shares += " vs " + "/".join(f"{prof_shares[k] * 100:.0f}" for k in PHASES)
                    spread = ", ".join(f"{p['img_per_s'] / r['img_per_s']:.3f}"
                                       for r, p in zip(refs, profs, strict=True))  # fmt: skip
                    print(
                        f"{family:<7} {imgsz:>5}  {batch:>5}  {ref:>13.2f}  {prof:>13.2f}  "
                        f"{ratio:>5.3f}  {shares}  (rounds {spread}; shares off by "
                        f"{worst:.1f} pt) {'ok' if ok else 'MISS'}",
                        flush=True,
                    )
                # the question the tool answers: both sides must pick the same batch
                same = best["trainer"][1] == best["profile"][1]
                failures += not same
                print(
                    f"{family:<7} {imgsz:>5}  best batch: trainer {best['trainer'][1]}, "
                    f"profile {best['profile'][1]} {'ok' if same else 'MISS'}",
                    flush=True,
                )
        bounds = f"±{ratio_bound * 100:.0f} % / {share_bound:.0f} points"
        print("PASS" if failures == 0 else f"FAIL: {failures} MISS lines (rows outside {bounds}, "
              "or another best batch)")  # fmt: skip


if __name__ == "__main__":
    main()
