"""CPU figures of the YOLOv9-t workload, side by side in one run.

* inference forward, ms per image at 640 (batch 1), plain vs `model.fuse()`; target: fused ≤ 0.85 x
  plain; for information also the fused model in channels-last (NHWC) layout;
* one training step (aux on, SGD, EMA; no AMP on CPU) at batch 4, 320 px: img/s, per-phase times
  and the loss's share of the step; target: ≥ 1.5 x libreyolo 1.6.0's 4.8 img/s; for information
  also the step with `channels_last=False`;
* the loss alone with targets padded to the batch maximum vs to 300 rows (1.6.0's width).

Warm-up runs first, then the median of several; plain and fused runs alternate so drift hits both.
Uses torch's default thread count. The load average is printed: on a shared machine other
processes oversubscribe the cores and slow every figure.

    python scripts/bench_workload.py [--runs 9] [--warmup 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial

import torch
from torch import Tensor

from libreyolo.workload.data.loader import Batch
from libreyolo.workload.train import PHASES, TrainStep
from libreyolo.workload.yolo9.loss import pad_targets
from libreyolo.workload.yolo9.model import YOLOv9

FUSED_TARGET = 0.85  # fused forward time / plain forward time, at most
REFERENCE_IMG_S = 4.8  # libreyolo 1.6.0, t, CPU training
SPEEDUP_TARGET = 1.5
NC = 80


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def random_batch(batch: int, imgsz: int, seed: int = 0) -> Batch:
    """Random images with 1-8 random boxes each (rows image, class, x1, y1, x2, y2 in pixels)."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for i in range(batch):
        n = int(torch.randint(1, 9, (1,), generator=g))
        centre = torch.rand(n, 2, generator=g) * imgsz
        half = (torch.rand(n, 2, generator=g) * 0.3 + 0.02) * imgsz
        xyxy = torch.cat((centre - half, centre + half), 1).clamp(0, imgsz)
        cls = torch.randint(0, NC, (n, 1), generator=g).float()
        rows.append(torch.cat((torch.full((n, 1), float(i)), cls, xyxy), 1))
    return Batch(torch.rand(batch, 3, imgsz, imgsz, generator=g), torch.cat(rows), [])


def bench_forward(runs: int, warmup: int) -> dict[str, float]:
    """Median ms per image at 640 of the plain, fused and fused channels-last models."""
    torch.manual_seed(0)
    plain = YOLOv9("t", NC).eval()
    fused = plain.fuse()
    nhwc = plain.fuse().to(memory_format=torch.channels_last)
    x = torch.rand(1, 3, 640, 640)
    cases = {
        "plain": (plain, x),
        "fused": (fused, x),
        "fused_nhwc": (nhwc, x.contiguous(memory_format=torch.channels_last)),
    }
    times: dict[str, list[float]] = defaultdict(list)
    with torch.inference_mode():
        for i in range(warmup + runs):
            for name, (model, inp) in cases.items():
                seconds = timed(partial(model, inp))
                if i >= warmup:
                    times[name].append(seconds)
    return {name: statistics.median(v) * 1e3 for name, v in times.items()}


def bench_train(
    runs: int, warmup: int, *, batch: int = 4, imgsz: int = 320, channels_last: bool = True
) -> dict[str, float]:
    """Median step and phase times (ms) and img/s of TrainStep on one random batch."""
    torch.manual_seed(0)
    step = TrainStep(YOLOv9("t", NC, aux=True), channels_last=channels_last)
    data = random_batch(batch, imgsz)
    phase_s: dict[str, list[float]] = defaultdict(list)

    @contextmanager
    def clock(name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        phase_s[name].append(time.perf_counter() - start)

    for _ in range(warmup):
        step.step(data)
    step_s = [timed(lambda: step.step(data, clock)) for _ in range(runs)]
    out = {name: statistics.median(phase_s[name]) * 1e3 for name in PHASES}
    out["step"] = statistics.median(step_s) * 1e3
    out["img_s"] = batch / statistics.median(step_s)
    out.update(bench_loss(step, data, runs))
    return out


def bench_loss(step: TrainStep, data: Batch, runs: int) -> dict[str, float]:
    """Median ms of the loss alone on fixed maps: forward, forward + backward, 300-row padding."""
    outputs = step.model(data.images)
    main = [m.detach().requires_grad_() for m in outputs.main]
    aux = [m.detach().requires_grad_() for m in outputs.aux] if outputs.aux else None
    maps = type(outputs)(main, aux)
    trimmed = pad_targets(data.targets, data.images.shape[0])
    wide = torch.zeros(trimmed.shape[0], 300, 5)
    wide[..., 0] = -1
    wide[:, : trimmed.shape[1]] = trimmed

    def fwd_bwd(targets: Tensor) -> None:
        torch.autograd.backward(step.loss(maps, targets)[0])

    with torch.no_grad():
        fwd = [timed(lambda: step.loss(maps, trimmed)) for _ in range(runs)]
    both = [timed(lambda: fwd_bwd(trimmed)) for _ in range(runs)]
    padded = [timed(lambda: fwd_bwd(wide)) for _ in range(runs)]
    return {
        "loss_fwd": statistics.median(fwd) * 1e3,
        "loss_fwd_bwd": statistics.median(both) * 1e3,
        "loss_fwd_bwd_300": statistics.median(padded) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, load average {load:.2f}")
    f = bench_forward(args.runs, args.warmup)
    ratio = f["fused"] / f["plain"]
    verdict = "met" if ratio <= FUSED_TARGET else "MISSED"
    print(
        f"forward 640, batch 1   plain {f['plain']:6.1f} ms/img   fused {f['fused']:6.1f} ms/img"
        f"   fused/plain {ratio:.2f} (target ≤ {FUSED_TARGET}: {verdict})"
    )
    nhwc = f["fused_nhwc"]
    print(f"  fused + channels-last {nhwc:6.1f} ms/img ({nhwc / f['plain']:.2f} x plain)")
    t = bench_train(args.runs, args.warmup)
    target = SPEEDUP_TARGET * REFERENCE_IMG_S
    verdict = "met" if t["img_s"] >= target else "MISSED"
    print(
        f"train step t+aux, batch 4, 320   {t['step']:7.1f} ms   {t['img_s']:5.2f} img/s   "
        f"({t['img_s'] / REFERENCE_IMG_S:.2f}x 1.6.0's {REFERENCE_IMG_S}; "
        f"target ≥ {target:.1f}: {verdict})"
    )
    print("  phases: " + "   ".join(f"{p} {t[p]:.1f} ms" for p in PHASES))
    print(
        f"  loss (main + aux): forward {t['loss_fwd']:.1f} ms "
        f"({t['loss_fwd'] / t['step']:.0%} of the step), forward + backward "
        f"{t['loss_fwd_bwd']:.1f} ms ({t['loss_fwd_bwd'] / t['step']:.0%}); "
        f"with 300-row padding {t['loss_fwd_bwd_300']:.1f} ms"
    )
    nchw = bench_train(args.runs, args.warmup, channels_last=False)
    print(f"  same step with channels_last=False: {nchw['step']:.1f} ms, {nchw['img_s']:.2f} img/s")


if __name__ == "__main__":
    main()
