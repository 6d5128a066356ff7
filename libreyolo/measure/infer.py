"""`libreyolo profile infer`: time the predict path (preprocess, forward, postprocess).

Role: validate the config (a `ProfileConfig` in mode infer: `config.schema.mode_defaults` gives
the one a flagless `profile infer` composes), load the model through its family
(`workload.registry`) and (by default) fuse it, decode the images once, run the window
(loop.py) over the family's infer step (unsynced end-to-end latency, then synced per-stage
walls; the unsynced runs recorded by the torch profiler), analyse the trace and save a finished
Profile into `<project>/infer/` through a staged run directory. Images are decoded before the
window, so preprocess times the letterbox and the host-to-device copy, not JPEG decoding (1.6.0
re-read and decoded the file every iteration, inflating preprocess). A batch the host memory
cannot hold at this size is refused once the model is loaded,
before the window (memory_check.py).
Must not print or exit, nor derive metrics or verdicts (`analysis.build.finalize` does).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec.structs
import torch

from libreyolo import defaults
from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import ExecMode, ProfileConfig
from libreyolo.document.mode import Mode
from libreyolo.document.model import (
    Agreement,
    Compute,
    Exported,
    Flops,
    GraphCapture,
    Profile,
    RunInfo,
    Samples,
    TraceAnalysis,
)
from libreyolo.errors import UsageError
from libreyolo.measure.agreement import EagerOf, agreement_of
from libreyolo.measure.artifacts import TRACE_NAME, StagedRun, set_dir
from libreyolo.measure.assemble import analysed_trace, assemble_profile, conclude, staged
from libreyolo.measure.compute import count_model_flops, device_peaks, math_dtype
from libreyolo.measure.device import resolve_device, select_device
from libreyolo.measure.energy import energy_meter, window_energy
from libreyolo.measure.environment import device_name
from libreyolo.measure.exec_mode import (
    CompileWatch,
    CudaGraphForward,
    check_exec,
    check_exec_device,
    compile_in_place,
    execution,
    first_call,
    use_channels_last,
    window_marker,
)
from libreyolo.measure.loop import MeasuredWindow, WindowRecord, run_window
from libreyolo.measure.memory import AllocatorStats, device_memory, reset_peaks
from libreyolo.measure.memory_check import check_inference
from libreyolo.measure.oom_snapshot import AllocationHistory, snapshot_path
from libreyolo.measure.rss import own_rss_bytes, with_baseline
from libreyolo.measure.stages import Progress, stage
from libreyolo.measure.threads import intra_op_threads, warn_if_crowded
from libreyolo.measure.window import TraceRecorder, WindowPlan, plan_inference_window

if TYPE_CHECKING:
    from PIL import Image
    from torch import nn

    from libreyolo.workload.family import InferRunner, Workload

# The stage that prepares each mode's forward (and makes its first call), as progress names it.
EXEC_STAGES = {
    ExecMode.eager: "prepare model",
    ExecMode.compile: "torch.compile",
    ExecMode.cudagraphs: "CUDA graph capture",
    ExecMode.onnxruntime: "ONNX export",
}
ORT_SPIN_NOTE = (
    "ONNX Runtime ran with session.intra_op.allow_spinning=0: its pool threads sleep between "
    "runs as torch's do, instead of spinning on the cores the pre- and postprocessing need"
)
FUSE_WITH_CHANNELS_LAST = "full"  # the fusion that leaves the weights channels-last

# --fuse: the family's fusion mode, or None to measure the model as loaded.
FUSE_CHOICES: dict[str, str | None] = {mode: mode for mode in defaults.FUSE_MODES} | {"none": None}
AMP_DTYPES = {"float16": torch.float16, "fp16": torch.float16}
AMP_DTYPES |= {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16}


def parse_amp_dtype(value: str) -> torch.dtype:
    """float16/fp16/bfloat16/bf16 (any case, trimmed), else UsageError before any model load."""
    dtype = AMP_DTYPES.get(value.strip().lower())
    if dtype is None:
        choices = ", ".join(sorted(AMP_DTYPES))
        raise UsageError(f"amp_dtype must be one of: {choices}; got {value!r}")
    return dtype


def _validate(s: ProfileConfig) -> None:
    if s.mode.measures is not Mode.INFER:  # a caller's slip: the profile would record another mode
        raise ValueError(f"profile_inference measures mode infer; the config says {s.mode}")
    if s.batch < 1:
        raise UsageError(f"--batch must be 1 or more; got {s.batch}")
    if s.imgsz < 0:
        raise UsageError(f"--imgsz must be positive (0: the model default); got {s.imgsz}")
    if not 0.0 <= s.conf <= 1.0 or not 0.0 <= s.iou <= 1.0:
        raise UsageError(f"--conf and --iou must lie in 0..1; got {s.conf} and {s.iou}")
    if s.max_det < 1:
        raise UsageError(f"--max-det must be 1 or more; got {s.max_det}")
    if s.model.fuse not in FUSE_CHOICES:
        raise UsageError(
            f"model.fuse must be one of {', '.join(FUSE_CHOICES)}; got {s.model.fuse!r}"
        )
    check_exec(s.exec, Mode.INFER, s.window.warmup)
    if ExecMode(s.exec.name) is ExecMode.onnxruntime:  # before any model loads
        from libreyolo.measure.onnx_exec import check_onnxruntime

        if s.half:  # autocast cannot reach into ORT: the window would run fp32 labelled half
            raise UsageError(
                "--half with --exec onnxruntime: the ONNX export runs in float32 (autocast "
                "does not reach ONNX Runtime); drop --half"
            )
        check_onnxruntime()


def _forward(
    model: nn.Module,
    s: ProfileConfig,
    device: torch.device,
    imgsz: int,
    notes: list[str],
) -> tuple[nn.Module, Exported | None]:
    """What the predict path calls as its forward in `s.exec`'s mode, and the ONNX export
    behind it (onnxruntime only). Compiling happens in place; its first call is the caller's."""
    name = ExecMode(s.exec.name)
    if name is ExecMode.compile:
        compile_in_place(model, s.exec)
    elif name is ExecMode.cudagraphs:
        return CudaGraphForward(model), None
    elif name is ExecMode.onnxruntime:
        from libreyolo.measure.onnx_exec import onnxruntime_forward

        if s.exec.channels_last:  # asked for by name: say it has no effect
            notes.append("--channels-last has no effect on ONNX Runtime: it picks its own layouts")
        notes.append(ORT_SPIN_NOTE)
        return onnxruntime_forward(
            model, batch=s.batch, imgsz=imgsz, device=device, cfg=s.exec, traced=s.trace
        )
    return model, None


def _ort_merge(forward: object, merged: list[int]) -> Callable[[Path], None] | None:
    """For an ONNX Runtime forward, what merges its per-node profile into the exported trace
    (the count of nodes merged is appended to `merged`); None for every other mode."""
    from libreyolo.measure.onnx_exec import OrtForward

    if not isinstance(forward, OrtForward):
        return None

    def merge(trace_path: Path) -> None:
        from libreyolo.measure.ort_trace import merge_ort_nodes

        merged.append(merge_ort_nodes(trace_path, forward.profile_events()))

    return merge


def _graph_capture(forward: object) -> GraphCapture | None:
    if not isinstance(forward, CudaGraphForward):
        return None
    return GraphCapture(capture_s=forward.capture_s, num_captures=forward.num_captures)


def _input_side(imgsz: int, workload: Workload) -> int:
    """The requested side rounded up to a multiple of the family's stride (1.6.0 does too)."""
    return math.ceil(imgsz / workload.stride) * workload.stride


def profile_inference(
    cfg: ProfileConfig,
    *,
    on_progress: Progress | None = None,
    into: StagedRun | None = None,
    notes: Sequence[str] = (),
) -> tuple[Profile, Path]:
    """Measure inference as `cfg` (mode infer) says, save `<project>/infer/profile.json`;
    returns (profile, its path). The profile's `run.config` is `cfg`, resolved.

    With `into`, measure into that staged set and leave the save and commit to its owner.
    `notes` are the caller's own about this run (e.g. a rounded --imgsz): the profile's list
    starts with them. `cfg.threads` holds for the whole measurement; torch's count is restored
    after."""
    with intra_op_threads(cfg.threads):
        return _profile_inference(cfg, on_progress, into, notes)


def _profile_inference(
    settings: ProfileConfig,
    on_progress: Progress | None,
    into: StagedRun | None,
    prior_notes: Sequence[str],
) -> tuple[Profile, Path]:
    from libreyolo.workload import images as image_files

    baseline_rss = own_rss_bytes()  # before anything of the run is built or loaded
    _validate(settings)
    amp_dtype = parse_amp_dtype(str(settings.amp_dtype))
    plan = plan_inference_window(
        settings.window.warmup, settings.window.runs, traced=settings.trace
    )
    device = resolve_device(settings.device.name)
    check_exec_device(settings.exec, device)
    select_device(device)
    with stage("load images", on_progress, hint="check the source images"):
        paths = image_files.load_images(settings.source)
        images = [image_files.decode_image(p) for p in paths]  # decoded once, outside the window

    notes = list(prior_notes)
    warn_if_crowded(0, device, notes)  # inference runs no loader workers
    dtype = math_dtype(device, amp_dtype if settings.half else None)
    with stage("calibrate peak", on_progress, hint="check the device"):
        peaks = device_peaks(device, device_name(device), dtype, notes)
    loaded = _load_model(settings, device, notes, on_progress)
    _check_memory(settings, loaded, images, device, on_progress)
    prepared = _prepare_step(
        settings, loaded, (images, paths), device, amp_dtype, notes, on_progress
    )

    with staged(set_dir(settings.project, "infer"), into) as run, torch.inference_mode():
        measured = _measure(
            settings, prepared.step, plan, device, loaded.memory_before, on_progress
        )
        agreement = _agreement(settings, loaded, prepared, (images, paths), device, on_progress)
        notes += measured.window.notes
        trace, exported = _analysed(measured, prepared, run, device, notes)
        energy = window_energy(measured.window.energy, settings.batch * plan.num_unsynced)
        profile = assemble_profile(
            kind=Mode.INFER,
            info=_run_info(settings, loaded, prepared, device, len(images)),
            device=device,
            plan=plan,
            samples=_latency_samples(measured.window),
            trace=trace,
            trace_kept=run.path(TRACE_NAME).is_file(),
            host=measured.window.host,
            device_memory=measured.memory,
            host_memory=with_baseline(measured.window.host_memory, baseline_rss),
            compute=Compute(math_dtype=dtype, flops=prepared.flops, peaks=peaks, energy=energy),
            notes=notes,
            execution=execution(
                settings.exec,
                channels_last=prepared.channels_last,
                compiled=measured.compiled(settings.exec),
                exported=exported,
                graph=_graph_capture(prepared.forward),
                agreement=agreement,
            ),
        )
        return profile, conclude(run, profile, commit=into is None)


@dataclasses.dataclass(frozen=True)
class _LoadedModel:
    """The model the window runs, and what loading it found."""

    workload: Workload
    model: nn.Module
    memory_before: AllocatorStats  # the allocator's counters before the window's work
    size: str  # the size the checkpoint describes
    random_init: bool
    imgsz: int  # the side measured: the requested one rounded up to the stride
    channels_last: bool  # whether the weights are laid out NHWC


def _load_model(
    settings: ProfileConfig, device: torch.device, notes: list[str], on_progress: Progress | None
) -> _LoadedModel:
    """The model loaded through its family and fused as `--fuse` says."""
    from libreyolo.workload.api import load_workload_model

    with stage("load weights", on_progress, hint="check --weights and --size"):
        workload, model = load_workload_model(
            settings.model.weights, settings.model.size, device, notes, settings.model.family
        )
        memory_before = reset_peaks(device)
        described = workload.describe(model)
        imgsz = _input_side(settings.imgsz or workload.default_imgsz(described.size), workload)
        fuse_mode = FUSE_CHOICES[settings.model.fuse]
        if fuse_mode is not None and fuse_mode in workload.fuse_modes:
            model = workload.fuse(model, fuse_mode)
        elif fuse_mode is not None:
            notes.append(f"{workload.name} has no {fuse_mode!r} fusion: the model ran as loaded")
        nhwc_fusion = fuse_mode == FUSE_WITH_CHANNELS_LAST and fuse_mode in workload.fuse_modes
        return _LoadedModel(
            workload=workload,
            model=model,
            memory_before=memory_before,
            size=described.size,
            random_init=bool(getattr(model, "random_init", False)),
            imgsz=imgsz,
            channels_last=use_channels_last(model, settings.exec.channels_last, nhwc_fusion),
        )


def _check_memory(
    settings: ProfileConfig,
    loaded: _LoadedModel,
    images: list[Image.Image],
    device: torch.device,
    on_progress: Progress | None,
) -> None:
    """Refuses, before the window, a batch this host or device cannot hold at this size."""
    with stage("check memory", on_progress, hint="lower --batch or --imgsz"):
        decoded = max(image.width * image.height * 3 for image in images)  # RGB, 8 bits
        check_inference(
            loaded.model,
            device=device,
            batch=settings.batch,
            imgsz=loaded.imgsz,
            decoded_bytes_per_image=decoded if settings.include_decode else 0,
        )


@dataclasses.dataclass(frozen=True)
class _Prepared:
    """The step the window times, and what preparing it found."""

    step: InferRunner
    forward: object  # what the step calls: the module, a compiled or captured one, an ORT session
    exported: Exported | None  # the ONNX export, under --exec onnxruntime
    channels_last: bool
    flops: Flops | None  # None: the count failed (a note says why)


def _prepare_step(
    settings: ProfileConfig,
    loaded: _LoadedModel,
    sources: tuple[list[Image.Image], list[Path]],
    device: torch.device,
    amp_dtype: torch.dtype,
    notes: list[str],
    on_progress: Progress | None,
) -> _Prepared:
    """FLOPs counted on the model as loaded, then the forward `--exec` asks for, wrapped in the
    family's predict step over the decoded `sources` (images, their paths)."""
    with stage("count FLOPs", on_progress, hint="check the model"):
        flops = count_model_flops(
            loaded.model, batch=settings.batch, imgsz=loaded.imgsz, training=False, notes=notes
        )
    exec_name = ExecMode(settings.exec.name)
    channels_last = loaded.channels_last
    with stage(EXEC_STAGES[exec_name], on_progress, hint="try --exec eager"):
        forward, exported = _forward(loaded.model, settings, device, loaded.imgsz, notes)
        if exported is not None:
            channels_last = False  # the export's graph is NCHW; ORT lays out as it chooses
    step = _predict_path(
        loaded,
        forward,
        sources,
        settings,
        device,
        half=settings.half,
        amp_dtype=amp_dtype,
        include_decode=settings.include_decode,
    )
    if settings.half and not step.amp_effective:
        notes.append(f"--half has no effect on {device.type}: the forward ran in float32")
    return _Prepared(
        step=step, forward=forward, exported=exported, channels_last=channels_last, flops=flops
    )


def _predict_path(
    loaded: _LoadedModel,
    forward: nn.Module,
    sources: tuple[list[Image.Image], list[Path]],
    settings: ProfileConfig,
    device: torch.device,
    *,
    half: bool,
    amp_dtype: torch.dtype,
    include_decode: bool,
) -> InferRunner:
    """The family's predict path around `forward` over the decoded `sources`."""
    return loaded.workload.infer_step(
        forward,
        *sources,
        imgsz=loaded.imgsz,
        batch=settings.batch,
        device=device,
        conf=settings.conf,
        iou=settings.iou,
        max_det=settings.max_det,
        half=half,
        amp_dtype=amp_dtype,
        include_decode=include_decode,
    )


def _agreement(
    settings: ProfileConfig,
    loaded: _LoadedModel,
    prepared: _Prepared,
    sources: tuple[list[Image.Image], list[Path]],
    device: torch.device,
    on_progress: Progress | None,
) -> Agreement | None:
    """After the window: the run against eager fp32 on the same images, when it was not eager
    fp32 itself (another execution mode, or `--half` that took effect); None when it was."""
    if ExecMode(settings.exec.name) is ExecMode.eager and not prepared.step.amp_effective:
        return None
    with stage("check agreement", on_progress, hint="try --exec eager"):
        reference = _predict_path(
            loaded,
            EagerOf(loaded.model),  # `--exec compile` compiled the module itself in place
            sources,
            settings,
            device,
            half=False,
            amp_dtype=torch.float32,
            include_decode=False,
        )
        return agreement_of(
            reference,
            prepared.step,
            num_images=len(sources[0]),
            batch=settings.batch,
            random_init=loaded.random_init,
        )


def _latency_samples(window: WindowRecord) -> Samples:
    """Inference's samples: the unsynced walls are the latency, the synced ones the stages."""
    return Samples(
        steps=window.steps,
        latency_ms=window.unsynced_wall_ms,
        stage_ms=window.phase_ms,
        bare_ms=window.bare_ms,
    )


def _measure(
    settings: ProfileConfig,
    step: InferRunner,
    plan: WindowPlan,
    device: torch.device,
    memory_before: AllocatorStats,
    on_progress: Progress | None,
) -> MeasuredWindow:
    """The first call (compile or capture) outside the window, then the window itself."""
    from libreyolo.workload.infer import PHASES

    exec_name = ExecMode(settings.exec.name)
    with stage("measure", on_progress, hint="try --no-trace, a smaller --batch or --imgsz"):
        recorder = TraceRecorder(plan, device.type, enabled=settings.trace)
        watch = CompileWatch.start() if exec_name is ExecMode.compile else None
        first_s = None
        if exec_name in (ExecMode.compile, ExecMode.cudagraphs):  # compiles or captures
            first_s = first_call(lambda: step.step(0), EXEC_STAGES[exec_name])
            if watch is not None:
                watch.mark_first_call()
        window = run_window(
            plan,
            device,
            window_marker(step.step, plan.num_warmup, watch),
            recorder,
            on_progress,
            phases=PHASES,
            meter=energy_meter(device),  # CUDA only; spans the unsynced runs
            history=AllocationHistory(device, snapshot_path(settings.project, "infer")),
        )
        memory = device_memory(device, memory_before)
    return MeasuredWindow(
        window=window, recorder=recorder, memory=memory, watch=watch, first_call_s=first_s or 0.0
    )


def _analysed(
    measured: MeasuredWindow,
    prepared: _Prepared,
    run: StagedRun,
    device: torch.device,
    notes: list[str],
) -> tuple[TraceAnalysis | None, Exported | None]:
    """The window's trace exported and analysed (ORT's nodes merged into it first), and the
    ONNX export's record with the node count that merge found."""
    merged_nodes: list[int] = []
    trace = analysed_trace(
        measured.recorder,
        run,
        measured.window.phase_ms,
        device,
        notes,
        merge=_ort_merge(prepared.forward, merged_nodes),
    )
    exported = prepared.exported
    if exported is not None and merged_nodes:
        exported = msgspec.structs.replace(exported, num_nodes=merged_nodes[0])
    return trace, exported


def _run_info(
    settings: ProfileConfig,
    loaded: _LoadedModel,
    prepared: _Prepared,
    device: torch.device,
    num_images: int,
) -> RunInfo:
    return RunInfo(
        mode=Mode.INFER.noun,
        model=loaded.workload.model_name(loaded.size),
        family=loaded.workload.name,
        weights=os.fspath(settings.model.weights),
        random_init=loaded.random_init,
        fused=bool(getattr(loaded.model, "is_fused", False)),
        device=str(device),
        batch=settings.batch,
        imgsz=loaded.imgsz,
        amp=prepared.step.amp_effective,
        num_images=num_images,
        config=as_plain_dict(settings),
    )
