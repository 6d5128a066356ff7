"""What the sweep tests share: the fixture checkpoint and the argv of a tiny CPU sweep."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.fixture_files import YOLO9T, fixture_file

CHECKPOINT = fixture_file(YOLO9T)


def tiny_sweep_argv(sweep_dir: Path, *overrides: str, isolate: bool = False) -> list[str]:
    """`libreyolo-sweep -m` over a 2-run CPU inference window into `sweep_dir`, with its own
    lock folder; `overrides` add the grid and anything else."""
    return [
        sys.executable,
        "-m",
        "libreyolo.sweep",
        "-m",
        "mode=infer",
        "device=cpu",
        "window.warmup=1",
        "window.runs=2",
        "trace=false",
        f"model.weights={CHECKPOINT}",
        f"hydra.sweep.dir={sweep_dir}",
        f"sweep.isolate={str(isolate).lower()}",
        f"sweep.lock_dir={sweep_dir / 'locks'}",
        *overrides,
    ]


def tune_argv(sweep_dir: Path, *overrides: str, mode: str = "infer") -> list[str]:
    """`libreyolo-sweep -m hydra/sweeper=tune` on the CPU at imgsz 64, in-process points, tiny
    windows (2 runs for inference, 2 steps for training) into `sweep_dir`; `overrides` add the
    search's settings and anything else."""
    return [
        sys.executable,
        "-m",
        "libreyolo.sweep",
        "-m",
        "hydra/sweeper=tune",
        f"mode={mode}",
        "device=cpu",
        "imgsz=64",
        "window.warmup=1",
        "window.runs=2",
        "window.steps=2",
        "dataset.workers=0",
        "trace=false",
        f"model.weights={CHECKPOINT}",
        f"hydra.sweep.dir={sweep_dir}",
        "sweep.isolate=false",
        f"sweep.lock_dir={sweep_dir / 'locks'}",
        *overrides,
    ]
