"""What the profiler costs: p50 latency of `profile infer` (no trace, and with trace) against a
bare loop of the same three stages, and the bare loop with host sampling around each iteration,
alternating in one process on CPU; the host sampler's own cost per step, with this process's
threads and with 8 idle child processes standing in for DataLoader workers; then `profile run`
img/s on the synthetic dataset at batch 4, imgsz 320, workers 0 (libreyolo 1.6.0: 4.8 img/s).

Targets: no trace ≤ 1.02 x the bare loop, trace ≤ 1.05 x (libreyolo 1.6.0 added 5-7 %), host
sampling < 1 % of a 10 ms step (100 us).

    python scripts/bench_overhead.py [--rounds 3] [--runs 20] [--warmup 5] [--imgsz 640]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from libreyolo.config.schema import (  # noqa: E402
    DatasetConfig,
    DeviceConfig,
    ModelConfig,
    WindowConfig,
    mode_defaults,
)
from libreyolo.measure.host import HostSampler  # noqa: E402
from libreyolo.measure.infer import profile_inference  # noqa: E402
from libreyolo.measure.train import profile_training  # noqa: E402
from libreyolo.workload.api import load_model  # noqa: E402
from libreyolo.workload.data.synthetic import make_synthetic  # noqa: E402
from libreyolo.workload.infer import InferStep  # noqa: E402
from libreyolo.workload.yolo9 import predict  # noqa: E402
from tests.fixture_files import YOLO9T, fixture_file  # noqa: E402

CHECKPOINT = fixture_file(YOLO9T)


TARGET_SAMPLING_US = 100.0  # 1 % of a 10 ms step
SAMPLER_STEPS = 2000
NUM_FAKE_WORKERS = 8


def bare_p50(
    model: torch.nn.Module,
    image: Image.Image,
    imgsz: int,
    warmup: int,
    runs: int,
    *,
    sampled: bool = False,
) -> float:
    """p50 ms of the collector's own iteration (preprocess -> forward -> postprocess) with
    nothing around it (the unsynced half of `runs`, as the profiler reports); `sampled`: with
    the host sampler's begin/end inside the timed span, as the loop runs them."""
    step = InferStep(model, [image], [predict.SAMPLE_IMAGE], imgsz=predict.input_size(imgsz))
    sampler = HostSampler()
    samples = []
    with torch.inference_mode():
        for i in range(warmup + runs // 2):
            start = time.perf_counter()
            if sampled:
                sampler.begin(after_sampled=i > warmup)
            step.step(i)
            if sampled:
                sampler.end()
            if i >= warmup:
                samples.append((time.perf_counter() - start) * 1000)
    sampler.window()
    return statistics.median(samples)


def sampler_us(worker_pids: list[int]) -> float:
    """Median microseconds of one begin/end pair over SAMPLER_STEPS empty steps."""
    sampler = HostSampler(worker_pids=lambda: worker_pids)
    costs = []
    for step in range(SAMPLER_STEPS):
        start = time.perf_counter()
        sampler.begin(after_sampled=step > 0)  # consecutive steps, as the loop samples them
        sampler.end()
        costs.append((time.perf_counter() - start) * 1e6)
    sampler.window()
    return statistics.median(costs)


def print_sampler_cost() -> None:
    idle = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        for _ in range(NUM_FAKE_WORKERS)
    ]
    try:
        time.sleep(0.5)
        alone, workers = sampler_us([]), sampler_us([p.pid for p in idle])
    finally:
        for p in idle:
            p.kill()
            p.wait()
    for label, cost in (("this process", alone), (f"+{NUM_FAKE_WORKERS} workers", workers)):
        share = cost / 10_000 * 100
        met = "met" if cost < TARGET_SAMPLING_US else "MISSED"
        print(
            f"  host sampling, {label:<13} {cost:6.1f} us/step = {share:.2f}% of a 10 ms step, "
            f"target < 1%: {met}"
        )


def profiled_p50(weights: str, imgsz: int, warmup: int, runs: int, trace: bool) -> float:
    with tempfile.TemporaryDirectory() as project:
        cfg = dataclasses.replace(
            mode_defaults("infer"),
            model=ModelConfig(weights=weights),
            imgsz=imgsz,
            window=WindowConfig(warmup=warmup, runs=runs),
            device=DeviceConfig(name="cpu"),
            trace=trace,
            project=project,
        )
        profile, _ = profile_inference(cfg)
    return float(profile.metrics["latency_p50_ms"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--imgsz", type=int, default=640)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    weights = str(CHECKPOINT)
    model = load_model(weights).fuse()
    image = predict.decode_image(predict.SAMPLE_IMAGE)
    rows: dict[str, list[float]] = {"bare": [], "sampled": [], "no trace": [], "trace": []}
    for _ in range(args.rounds):  # alternate, so drift on a noisy machine hits all of them
        rows["bare"].append(bare_p50(model, image, args.imgsz, args.warmup, args.runs))
        rows["sampled"].append(
            bare_p50(model, image, args.imgsz, args.warmup, args.runs, sampled=True)
        )
        rows["no trace"].append(profiled_p50(weights, args.imgsz, args.warmup, args.runs, False))
        rows["trace"].append(profiled_p50(weights, args.imgsz, args.warmup, args.runs, True))
    bare = statistics.median(rows["bare"])
    print(
        f"infer p50, t at {args.imgsz}, batch 1, CPU, {torch.get_num_threads()} threads, "
        f"{args.rounds} rounds (median of the per-round p50s)"
    )
    # The sampled loop has no target of its own: its cost is below this comparison's noise,
    # and the direct measurement after the table is what the 1 % target is checked on.
    for label, target in (("bare", None), ("sampled", None), ("no trace", 1.02), ("trace", 1.05)):
        p50 = statistics.median(rows[label])
        verdict = "" if label == "bare" else f"  {p50 / bare:.3f}x bare"
        if target is not None:
            verdict += f", target ≤ {target}: {'met' if p50 / bare <= target else 'MISSED'}"
        print(f"  {label:<9} {p50:7.2f} ms  rounds {[round(v, 1) for v in rows[label]]}{verdict}")
    print_sampler_cost()
    with tempfile.TemporaryDirectory() as tmp:
        data = make_synthetic(Path(tmp) / "data", num_train=64, num_val=4, imgsz=320)
        cfg = dataclasses.replace(
            mode_defaults("run"),
            dataset=DatasetConfig(name_or_path=str(data), workers=0),
            model=ModelConfig(weights=weights),
            batch=4,
            imgsz=320,
            window=WindowConfig(steps=10, warmup=2),
            device=DeviceConfig(name="cpu"),
            project=str(Path(tmp) / "p"),
        )
        profile, _ = profile_training(cfg)
    ips = float(profile.metrics["img_per_s"])
    print(
        f"profile run, synthetic, batch 4, imgsz 320, workers 0: {ips:.2f} img/s "
        f"({ips / 4.8:.2f}x libreyolo 1.6.0's 4.8 img/s)"
    )


if __name__ == "__main__":
    main()
