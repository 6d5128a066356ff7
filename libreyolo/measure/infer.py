"""`libreyolo profile infer`: time the predict path (preprocess, forward, postprocess).

Role: validate the settings, load and (by default) fuse the model, decode the images once,
run the window of window.py (unsynced end-to-end latency, then synced per-stage walls), record
the unsynced half with the torch profiler, analyse the trace and save a finished Profile into
`<project>/infer/` through a staged run directory. Images are decoded before the window, so
preprocess times the letterbox and the host-to-device copy, not JPEG decoding (§15 item 19).
Must not print or exit, nor derive metrics or verdicts (`analysis.build.finalize` does).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from libreyolo.document.model import Profile, RunInfo, Samples, StepSample
from libreyolo.errors import UsageError
from libreyolo.measure.artifacts import StagedRun, set_dir
from libreyolo.measure.assemble import analysed_trace, assemble_profile, conclude, staged
from libreyolo.measure.device import resolve_device, synchronize
from libreyolo.measure.memory import reset_peaks
from libreyolo.measure.phases import PhaseTimer, ms
from libreyolo.measure.stages import stage
from libreyolo.measure.window import TraceRecorder, WindowPlan, plan_window

if TYPE_CHECKING:
    from libreyolo.workload.yolo9.model import FuseMode, YOLOv9

Progress = Callable[[str, int, int], None]  # (stage, done, total): "measure" per iteration
STAGES = ("preprocess", "forward", "postprocess")
# --fuse: the model's fusion mode, or None to measure the model as loaded.
FUSE_CHOICES: dict[str, FuseMode | None] = {"full": "full", "bn": "bn", "none": None}
DEFAULT_IMGSZ = 640  # --imgsz 0 means the model's default input side
AMP_DTYPES = {"float16": torch.float16, "fp16": torch.float16}
AMP_DTYPES |= {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16}


@dataclass(frozen=True, slots=True)
class InferSettings:
    """Everything `profile infer` needs; the CLI/Hydra layer fills it."""

    weights: str = "LibreYOLO9t.pt"
    size: str | None = None
    source: str | None = None  # None: the bundled sample image
    batch: int = 1
    imgsz: int = DEFAULT_IMGSZ
    half: bool = False
    amp_dtype: str = "float16"
    warmup: int = 20
    runs: int = 100
    conf: float = 0.25
    iou: float = 0.45
    max_det: int = 300
    device: str = "0"
    trace: bool = True
    project: str = "runs/profile"
    fuse: str = "full"  # full (BN folded, RepConvN merged, channels-last), bn, or none
    include_decode: bool = False  # decode files inside the window (in preprocess), not before


def parse_amp_dtype(value: str) -> torch.dtype:
    """float16/fp16/bfloat16/bf16 (any case, trimmed), else UsageError before any model load."""
    dtype = AMP_DTYPES.get(value.strip().lower())
    if dtype is None:
        choices = ", ".join(sorted(AMP_DTYPES))
        raise UsageError(f"amp_dtype must be one of: {choices}; got {value!r}")
    return dtype


def _validate(s: InferSettings) -> None:
    if s.batch < 1:
        raise UsageError(f"--batch must be 1 or more; got {s.batch}")
    if s.imgsz < 0:
        raise UsageError(f"--imgsz must be positive (0: the model default); got {s.imgsz}")
    if not 0.0 <= s.conf <= 1.0 or not 0.0 <= s.iou <= 1.0:
        raise UsageError(f"--conf and --iou must lie in 0..1; got {s.conf} and {s.iou}")
    if s.max_det < 1:
        raise UsageError(f"--max-det must be 1 or more; got {s.max_det}")
    if s.fuse not in FUSE_CHOICES:
        raise UsageError(f"model.fuse must be one of {', '.join(FUSE_CHOICES)}; got {s.fuse!r}")


def load_workload_model(
    weights: str, size: str | None, device: torch.device, notes: list[str]
) -> YOLOv9:
    """The model on `device`; a random-init fallback is announced again and noted."""
    from libreyolo.workload.api import RandomWeightsWarning, load_model

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RandomWeightsWarning)
        model = load_model(weights, size=size, device=device)
    for warning in caught:
        if issubclass(warning.category, RandomWeightsWarning):
            notes.append(f"random weights: {warning.message} (timings real, detections not)")
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return model


def profile_inference(
    settings: InferSettings,
    *,
    on_progress: Progress | None = None,
    into: StagedRun | None = None,
) -> tuple[Profile, Path]:
    """Measure inference, save `<project>/infer/profile.json`; returns (profile, its path).

    With `into`, measure into that staged set and leave the save and commit to its owner."""
    from libreyolo.workload.yolo9 import predict

    _validate(settings)
    amp_dtype = parse_amp_dtype(settings.amp_dtype)
    plan = plan_window(settings.warmup, settings.runs, traced=settings.trace)
    device = resolve_device(settings.device)
    with stage("load images", on_progress, hint="check the source images"):
        paths = predict.load_images(settings.source)
        images = [predict.decode_image(p) for p in paths]  # decoded once, outside the window
    imgsz = predict.input_size(settings.imgsz or DEFAULT_IMGSZ)

    notes: list[str] = []
    with stage("load weights", on_progress, hint="check --weights and --size"):
        model = load_workload_model(settings.weights, settings.size, device, notes)
        reset_peaks(device)
        random_init = bool(getattr(model, "random_init", False))
        fuse_mode = FUSE_CHOICES[settings.fuse]
        if fuse_mode is not None:
            model = model.fuse(fuse_mode, in_place=True)  # the unfused model is not used again
    amp_effective = settings.half and device.type == "cuda"
    if settings.half and not amp_effective:
        notes.append(f"--half has no effect on {device.type}: the forward ran in float32")
    autocast: Callable[[], AbstractContextManager[object]] = (
        (lambda: torch.autocast("cuda", dtype=amp_dtype)) if amp_effective else nullcontext
    )

    def run_once(iteration: int, timer: PhaseTimer) -> None:
        first = iteration * settings.batch
        picks = [(first + j) % len(images) for j in range(settings.batch)]
        with timer("preprocess"):
            batch = (
                [predict.decode_image(paths[k]) for k in picks]
                if settings.include_decode
                else [images[k] for k in picks]
            )
            x, boxes = predict.preprocess(batch, imgsz=imgsz, device=device)
        with timer("forward"), autocast():
            pred = model(x)
        with timer("postprocess"):
            detections = predict.postprocess(
                pred, boxes, conf=settings.conf, iou=settings.iou, max_det=settings.max_det
            )
            # Latency ends with the detections in host memory, as a caller would use them.
            for found in detections:
                found.boxes.cpu(), found.scores.cpu(), found.classes.cpu()

    with staged(set_dir(settings.project, "infer"), into) as run, torch.inference_mode():
        with stage("measure", on_progress, hint="try --no-trace, a smaller --batch or --imgsz"):
            samples = _measure(plan, device, settings.trace, run_once, on_progress)
        trace = analysed_trace(samples.recorder, run, samples.stage_ms, device, notes)
        config = asdict(settings) | {
            "amp_dtype": str(amp_dtype).removeprefix("torch."),
            "imgsz_input": imgsz,
            "num_images": len(images),
            "device_resolved": str(device),
            "amp_effective": amp_effective,
            "random_init": random_init,
            "fused": bool(getattr(model, "is_fused", False)),
            "fuse": settings.fuse,
            "notes": list(notes),
        }
        info = RunInfo(
            mode="inference",
            model=f"LibreYOLO9{getattr(model, 'size', settings.size or '')}",
            weights=os.fspath(settings.weights),
            device=str(device),
            batch=settings.batch,
            imgsz=imgsz,
            amp=amp_effective,
            config=config,
        )
        recorded = Samples(
            steps=samples.steps,
            latency_ms=samples.latency_ms,
            stage_ms=samples.stage_ms,
            bare_ms=samples.bare_ms,
        )
        profile = assemble_profile(
            kind="infer", info=info, device=device, plan=plan, samples=recorded, trace=trace
        )
        return profile, conclude(run, profile, commit=into is None)


@dataclass
class _Samples:
    recorder: TraceRecorder
    steps: list[StepSample]
    latency_ms: list[float]
    stage_ms: dict[str, list[float]]
    bare_ms: list[float]


def _measure(
    plan: WindowPlan,
    device: torch.device,
    trace: bool,
    run_once: Callable[[int, PhaseTimer], None],
    on_progress: Progress | None,
) -> _Samples:
    """Run warmup, the traced unsynced half, the bare calibration iterations, then the synced
    half; collect raw samples."""
    timer = PhaseTimer(device)
    recorder = TraceRecorder(plan, device.type, enabled=trace)
    out = _Samples(recorder, [], [], {stage: [] for stage in STAGES}, [])
    try:
        for iteration in range(plan.num_total):
            if iteration == plan.num_traced:
                recorder.close()  # the synced half runs without the profiler
            synced = plan.is_synced(iteration)
            timer.begin(synced=synced)
            start = time.perf_counter()
            run_once(iteration, timer)
            if not synced:
                synchronize(device)  # one sync at the end: latency includes all queued work
            elapsed = ms(time.perf_counter() - start)
            if iteration < plan.num_traced:
                recorder.step()
            if plan.is_bare(iteration):
                out.bare_ms.append(elapsed)
            elif not plan.is_warmup(iteration):
                index = iteration - plan.num_warmup - (plan.num_bare if synced else 0)
                _record(out, index, synced, elapsed, timer.wall_ms())
            if on_progress is not None:
                on_progress(*plan.progress(iteration))
    finally:
        recorder.close()
    return out


def _record(
    out: _Samples, index: int, synced: bool, elapsed: float, walls: dict[str, float]
) -> None:
    if synced:
        for stage in STAGES:
            out.stage_ms[stage].append(walls.get(stage, 0.0))
        out.steps.append(
            StepSample(
                index=index, synced=True, wall_ms=round(sum(walls.values()), 4), phase_ms=walls
            )
        )
    else:
        out.latency_ms.append(elapsed)
        out.steps.append(StepSample(index=index, synced=False, wall_ms=elapsed))
