"""YOLOX-n/t/s forward and training-step figures beside libreyolo 1.6.0's own, same machine.

Each tool measures with its own `libreyolo profile`: `infer` (forward stage, latency p50) at the
size's default input, and `run` (step ms, img/s) on the built-in synthetic dataset, with the same
seed-0 random weights in 1.6.0's checkpoint layout (both load it key for key). Sizes run one
after another, ours then 1.6.0's, so both see the same machine state; the table prints ours,
1.6.0's and the ratio. libreyolo 1.6.0 lives in a separate virtual environment (never a
dependency of this project):

    python3 -m venv /tmp/venv16 && /tmp/venv16/bin/pip install torch==2.14.1 \\
        torchvision==0.29.1 libreyolo==1.6.0
    python scripts/bench_vs_v1.py --v1 /tmp/venv16/bin/libreyolo
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from libreyolo.workload.data.synthetic import make_synthetic
from libreyolo.workload.yolox.checkpoint import save_checkpoint
from libreyolo.workload.yolox.model import SIZES, YOLOX

OURS = [sys.executable, "-m", "libreyolo"]
INFER = "profile infer --device cpu --warmup 5 --runs 30 --no-trace --imgsz {imgsz} --size {size}"
TRAIN = (
    "profile run {data} --device cpu --batch 4 --imgsz 320 --steps 8 --warmup 3 --workers 0"
    " --size {size}"
)


def _profile(cli: list[str], args: str, weights: Path, project: Path) -> dict:
    """Run one measurement; the profile its `profile: <path>` line names (both tools print it,
    and 1.6.0 keeps training profiles in `<project>/prof/`)."""
    argv = [*cli, *args.split(), "--weights", str(weights), "--project", str(project)]
    done = subprocess.run(argv, check=True, capture_output=True, text=True, cwd=project.parent)
    line = next(x for x in done.stdout.splitlines() if x.startswith("profile: "))
    return json.loads(Path(line.removeprefix("profile: ").strip()).read_text())


def _metric(doc: dict, name: str) -> float:
    metrics = doc.get("metrics", doc)
    value = metrics.get(name, doc.get(name))
    return float(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--v1", required=True, help="libreyolo 1.6.0's own `libreyolo` command")
    parser.add_argument("--sizes", default="n,t,s")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = make_synthetic(work / "data")
        print(f"{'YOLOX':<6}{'metric':<22}{'ours':>10}{'1.6.0':>10}{'ratio':>8}")
        for size in args.sizes.split(","):
            torch.manual_seed(0)
            weights = save_checkpoint(YOLOX(size, 80), work / f"LibreYOLOX{size}.pt")
            imgsz = SIZES[size].default_imgsz
            rows = []
            for label, command, metrics in (
                ("infer", INFER, ("forward_ms", "latency_p50_ms")),
                ("train", TRAIN, ("step_ms", "img_per_s")),
            ):
                filled = command.format(imgsz=imgsz, size=size, data=data)
                ours = _profile(OURS, filled, weights, work / f"ours_{size}_{label}")
                v1 = _profile([args.v1], filled, weights, work / f"v1_{size}_{label}")
                rows += [(m, _metric(ours, m), _metric(v1, m)) for m in metrics]
            for name, mine, theirs in rows:
                print(f"{size:<6}{name:<22}{mine:>10.2f}{theirs:>10.2f}{mine / theirs:>8.2f}")


if __name__ == "__main__":
    main()
