"""How far from the limit, and what finding out costs: MFU of YOLOv9-t and YOLOX-s at two batch
sizes, inference and training, on this machine's CPU, each beside the cost of its FLOP count
and of the GEMM peak calibration as a share of the measured window it sits beside.

Every point is a real profile (the collectors' own code path); the first one calibrates the
GEMM peak into a fresh cache directory and the others read it, as a sweep would. The FLOP
count runs once per (model, input, mode) in the process. Targets: the count and the
calibration each cost under a window's time (they run once, outside it); achieved TFLOP/s
equals FLOPs per image x img/s (checked to 1 %); MFU in (0, 1] against the measured peak.

    python scripts/bench_compute.py [--runs 10] [--steps 6] [--infer-imgsz 640] [--train-imgsz 320]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from libreyolo.config.schema import (  # noqa: E402
    DatasetConfig,
    DeviceConfig,
    ModelConfig,
    WindowConfig,
    mode_defaults,
)
from libreyolo.document.model import Profile  # noqa: E402
from libreyolo.measure.infer import profile_inference  # noqa: E402
from libreyolo.measure.train import profile_training  # noqa: E402
from libreyolo.workload.data.synthetic import make_synthetic  # noqa: E402

MODELS = ("LibreYOLO9t.pt", "LibreYOLOXs.pt")  # random init: FLOPs and timings are the weights'
INFER_BATCHES = (1, 8)
TRAIN_BATCHES = (2, 8)


def window_ms(profile: Profile) -> float:
    """The measured iterations' wall time (unsynced and synced), what a count sits beside."""
    return sum(step.wall_ms for step in profile.samples.steps) + sum(profile.samples.bare_ms)


def row(label: str, profile: Profile) -> str:
    m, compute = profile.metrics, profile.compute
    assert compute is not None and compute.flops is not None
    measured = next(p for p in compute.peaks if p.source == "measured")
    window = window_ms(profile)
    check = float(m["flops_per_image"] or 0) * float(m["img_per_s"] or 0) / 1e12
    achieved = float(m["achieved_tflops"] or 0)
    agrees = abs(achieved / check - 1) <= 0.01 if check else False
    mfu = float(m["mfu"] or 0)
    calibration = (
        "cached"
        if measured.cached
        else f"{measured.calibration_ms:.0f} ms ({measured.calibration_ms / window:.2f}x window)"  # type: ignore[operator]
    )
    return (
        f"  {label:<24} {float(m['flops_per_image'] or 0) / 1e9:7.2f} GFLOP/img "
        f"{float(m['img_per_s'] or 0):7.2f} img/s  "
        f"{achieved:.4f} of {measured.tflops:.3f} TFLOP/s  "
        f"MFU {mfu:6.1%} "
        f"{'in (0, 1]' if 0 < mfu <= 1 else 'OUT OF (0, 1]'}  achieved=FLOPs*img/s "
        f"{'within 1 %' if agrees else 'MISSED'}  count {compute.flops.count_ms:.0f} ms "
        f"({compute.flops.count_ms / window:.2f}x window)  peak {calibration}"
        f"{'  CONTENDED' if m['contended'] else ''}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--infer-imgsz", type=int, default=640)
    parser.add_argument("--train-imgsz", type=int, default=320)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LIBREYOLO_CACHE_DIR"] = str(Path(tmp) / "cache")  # the first run calibrates
        data = make_synthetic(Path(tmp) / "data", num_train=96, num_val=4, imgsz=args.train_imgsz)
        print(f"CPU, {torch.get_num_threads()} threads, fp32")
        for weights in MODELS:
            for batch in INFER_BATCHES:
                cfg = dataclasses.replace(
                    mode_defaults("infer"),
                    model=ModelConfig(weights=weights),
                    batch=batch,
                    imgsz=args.infer_imgsz,
                    window=WindowConfig(warmup=2, runs=args.runs),
                    device=DeviceConfig(name="cpu"),
                    project=str(Path(tmp) / "p"),
                )
                profile, _ = profile_inference(cfg)
                print(row(f"infer {weights[9:-3]} b{batch} @{args.infer_imgsz}", profile))
            for batch in TRAIN_BATCHES:
                cfg = dataclasses.replace(
                    mode_defaults("run"),
                    dataset=DatasetConfig(name_or_path=str(data), workers=0),
                    model=ModelConfig(weights=weights),
                    batch=batch,
                    imgsz=args.train_imgsz,
                    window=WindowConfig(steps=args.steps, warmup=2),
                    device=DeviceConfig(name="cpu"),
                    project=str(Path(tmp) / "p"),
                )
                profile, _ = profile_training(cfg)
                print(row(f"train {weights[9:-3]} b{batch} @{args.train_imgsz}", profile))


if __name__ == "__main__":
    main()
