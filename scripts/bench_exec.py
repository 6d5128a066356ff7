"""Is compile worth it here? Eager vs torch.compile vs ONNX Runtime for YOLOv9-t and YOLOX-s,
measured side by side in one run on this machine (CPU by default), each a real profile through
the collector's own path: the same window, pre- and postprocessing and statistics.

Per mode: latency p50, img/s, the stage split's forward, the one-off cost (compile_s, or the
ONNX export plus the session build) and the speed-up over eager (eager p50 / mode p50), with
the break-even: how many calls the one-off cost takes to pay back. ONNX Runtime needs the
extra (pip install 'libreyolo[onnx]'); without it its rows say so. Random-init weights: the
forward's timings are the weights', but NMS sees almost no boxes.

    python scripts/bench_exec.py [--device cpu] [--imgsz 640] [--batch 1] [--runs 40]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import sys
import tempfile
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from libreyolo.config.schema import (  # noqa: E402
    DeviceConfig,
    ExecConfig,
    ExecMode,
    ModelConfig,
    WindowConfig,
    mode_defaults,
)
from libreyolo.document.model import Profile  # noqa: E402
from libreyolo.measure.infer import profile_inference  # noqa: E402

MODELS = (("yolo9", "LibreYOLO9t.pt"), ("yolox", "LibreYOLOXs.pt"))
MISSING_ORT = "not installed: pip install 'libreyolo[onnx]'"
MODES = (ExecMode.eager, ExecMode.compile, ExecMode.onnxruntime)


def one_off_s(profile: Profile) -> float | None:
    """What the mode paid once, before the window: compile, or export plus session build."""
    execution = profile.execution
    if execution is None:
        return None
    if execution.compiled is not None:
        return execution.compiled.compile_s
    if execution.exported is not None:
        exported = execution.exported
        return (0.0 if exported.cached else exported.export_s) + exported.session_s
    return 0.0


def measure(family: str, weights: str, mode: ExecMode, args: argparse.Namespace) -> Profile:
    base = mode_defaults("infer")
    cfg = dataclasses.replace(
        base,
        model=ModelConfig(family=family, weights=weights),
        device=DeviceConfig(name=args.device),
        window=WindowConfig(warmup=args.warmup, runs=args.runs),
        exec=ExecConfig(name=mode),
        batch=args.batch,
        imgsz=args.imgsz,
        project=args.project,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random weights: announced in the docstring
        profile, _ = profile_inference(cfg)
    return profile


def row(model: str, mode: ExecMode, profile: Profile, eager_p50: float | None) -> str:
    m = profile.metrics
    p50 = float(m["latency_p50_ms"] or 0)
    forward = float(m.get("forward_ms") or 0)
    cost = one_off_s(profile)
    speedup = eager_p50 / p50 if eager_p50 and p50 else None
    saved_ms = (eager_p50 - p50) if eager_p50 else 0.0
    payback = f"{cost * 1000 / saved_ms:9.0f}" if cost and saved_ms > 0 else "        -"
    ratio = f"{speedup:6.2f}x" if speedup else "      -"
    exported = profile.execution.exported if profile.execution else None
    cached = " (cached)" if exported is not None and exported.cached else ""
    return (
        f"{model:8} {mode.value:12} {p50:9.2f} {float(m['img_per_s'] or 0):8.1f} {forward:10.2f}"
        f" {cost if cost is not None else 0:10.2f}{cached:9} {ratio} {payback}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--imgsz", type=int, default=640)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    has_ort = importlib.util.find_spec("onnxruntime") is not None
    print(
        f"device {args.device}, imgsz {args.imgsz}, batch {args.batch}, runs {args.runs}, "
        f"warmup {args.warmup}, {torch.get_num_threads()} torch threads"
    )
    print(
        f"{'model':8} {'exec':12} {'p50 ms':>9} {'img/s':>8} {'forward ms':>10} "
        f"{'one-off s':>10}{'':9} {'vs eager':>7} {'payback calls':>9}"
    )
    with tempfile.TemporaryDirectory() as scratch:
        args.project = str(Path(scratch) / "runs")
        os.environ.setdefault("LIBREYOLO_CACHE_DIR", str(Path(scratch) / "cache"))
        for family, weights in MODELS:
            eager_p50 = None
            for mode in MODES:
                if mode is ExecMode.onnxruntime and not has_ort:
                    print(f"{family:8} {mode.value:12} {MISSING_ORT}")
                    continue
                profile = measure(family, weights, mode, args)
                if mode is ExecMode.eager:
                    eager_p50 = float(profile.metrics["latency_p50_ms"] or 0)
                print(row(family, mode, profile, eager_p50), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
