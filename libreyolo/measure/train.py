"""`libreyolo profile run`: time real training steps of a model family on a dataset.

Role: validate the config (a `ProfileConfig` in mode run, e.g. `config.schema.mode_defaults`
with changes); check that one epoch of the dataset holds the measured steps at
this batch (an epoch boundary inside the window would add loader restarts and reshuffles to
`dataload` and could flip the verdict, as 1.6.0's non-persistent workers did; warmup may span
epochs, and the window starts a fresh epoch when the
current one cannot hold it, a restart noted in the profile). The built-in synthetic set is
generated to hold the whole run (at most synthetic.MAX_TRAIN_IMAGES: a window that needs more
is refused before anything is drawn); the overhead-calibration (bare) steps are ours, not the
window's, so they are trimmed to what the epoch holds beside the measured steps (noted) and
never fail a run. `--workers` is capped to the batches the run loads (noted), and a batch the
host memory cannot hold is refused before the window (memory_check.py). Run the window
(loop.py) with the phases `dataload`, `to_device`, `forward`, `backward`, `optimizer`, the
unsynced half recorded by the torch profiler; analyse the trace and save a finished Profile
into `<project>/run/` through a staged run directory. No validation pass or checkpoint runs
inside the window. Must not print or exit, nor derive metrics or verdicts
(`analysis.build.finalize`).
"""

from __future__ import annotations

import dataclasses
import gc
import os
import time
import warnings
from collections.abc import Callable, Generator, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch

from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import ExecMode, ProfileConfig
from libreyolo.document.mode import Mode
from libreyolo.document.model import (
    Compute,
    Flops,
    Profile,
    RunInfo,
    Samples,
    TensorMemory,
    VariantTrial,
)
from libreyolo.document.phases import DATALOAD, TRAIN_PHASES
from libreyolo.errors import NoProfileError, UsageError
from libreyolo.measure import host_fit
from libreyolo.measure.artifacts import TRACE_NAME, StagedRun, set_dir
from libreyolo.measure.assemble import analysed_trace, assemble_profile, conclude, staged
from libreyolo.measure.compute import count_model_flops, device_peaks, math_dtype
from libreyolo.measure.device import resolve_device, select_device
from libreyolo.measure.energy import energy_meter, window_energy
from libreyolo.measure.environment import device_name
from libreyolo.measure.exec_mode import (
    CompileWatch,
    check_exec,
    compile_in_place,
    execution,
    first_call,
    window_marker,
)
from libreyolo.measure.from_config import Note
from libreyolo.measure.loop import MeasuredWindow, run_window
from libreyolo.measure.memory import AllocatorStats, device_memory, reset_peaks
from libreyolo.measure.memory_check import check_training
from libreyolo.measure.oom_snapshot import AllocationHistory, snapshot_path
from libreyolo.measure.phases import PhaseTimer
from libreyolo.measure.rss import WindowPeakRss, own_rss_bytes, with_baseline
from libreyolo.measure.stages import Progress, stage
from libreyolo.measure.tensor_memory import phase_peaks, probe_batches, track_step
from libreyolo.measure.threads import intra_op_threads, training_threads, warn_if_crowded
from libreyolo.measure.train_options import (
    RunOptions,
    check_variants,
    recorded_variants,
    run_options,
    training_channels_last,
    user_keys,
)
from libreyolo.measure.variant_trials import time_variants
from libreyolo.measure.window import TraceRecorder, WindowPlan, fit_calibration, plan_window
from libreyolo.workload.distributed import world_size

if TYPE_CHECKING:
    from torch.utils.data import DataLoader, Dataset, Sampler

    from libreyolo.measure.autobatch import DataLimits, DeviceMemory
    from libreyolo.workload.data.dataset_config import DatasetSpec
    from libreyolo.workload.family import TrainRunner, Workload

SEED = 0  # fixed shuffle and augmentation, so two runs see the same batches


def _fit_batch(
    settings: ProfileConfig,
    device: torch.device,
    plan: WindowPlan,
    memory: DeviceMemory | None = None,
) -> tuple[int, str]:
    """The batch AutoBatch fits on `device` and its note, probing the measured step itself:
    the same weights, size and classes, AMP and EMA, on probe batches as crowded with boxes as
    the densest training sample, capped so the dataset holds the run (see `autobatch`; on the
    CPU, without a `memory` to probe, `host_fit`: the tensors' prediction, confirmed by a
    real step)."""
    from libreyolo.measure.autobatch import CudaMemory, autobatch, data_limits

    limits = data_limits(settings.dataset.name_or_path, plan)
    if memory is None and device.type != "cuda":
        return _fit_host_batch(settings, device, limits)

    def make_step() -> Callable[[int], object]:
        trainer, probe_batch = probe_trainer(settings, device, limits)
        return lambda batch: trainer.step(probe_batch(batch))

    return autobatch(make_step, memory or CudaMemory(device), limits.cap)


def _fit_host_batch(
    settings: ProfileConfig, device: torch.device, limits: DataLimits
) -> tuple[int, str]:
    budget = host_fit.read_budget()  # before the probe model: its memory is the process's
    probe = HostStepProbe(*probe_trainer(settings, device, limits))
    try:
        return host_fit.fit_host_batch(probe, budget, limits.cap)
    finally:
        del probe  # the probe model's last reference, before the run loads its own
        gc.collect()


class HostStepProbe:
    """`host_fit.HostProbe`: one step of the probe trainer, its own peak RSS measured."""

    def __init__(self, trainer: TrainRunner, probe_batch: Callable[[int], object]) -> None:
        self._trainer, self._probe_batch = trainer, probe_batch

    def __call__(self, batch: int, *, tracked: bool) -> host_fit.HostProbeStep:
        inputs = self._probe_batch(batch)
        peak = WindowPeakRss()
        peak.start()
        if tracked:
            phases: dict[str, int] | None = phase_peaks(self._trainer, inputs)
        else:
            phases = None
            self._trainer.step(inputs)
        memory, note = peak.end()
        if memory is None or memory.peak_rss_bytes is None:
            raise NoProfileError(f"--batch -1 needs the process's peak RSS; {note}")
        return host_fit.HostProbeStep(memory.peak_rss_bytes, phases)


def probe_trainer(
    settings: ProfileConfig, device: torch.device, limits: DataLimits
) -> tuple[TrainRunner, Callable[[int], object]]:
    """The measured step on a model of its own, and probe batches of a given size for it."""
    from libreyolo.workload.api import RandomWeightsWarning, load_workload_model

    with warnings.catch_warnings():  # the measured load announces random weights
        warnings.simplefilter("ignore", RandomWeightsWarning)
        workload, model = load_workload_model(
            settings.model.weights, settings.model.size, device, [], settings.model.family
        )
    if workload.describe(model).nc != limits.nc:
        workload.reset_classes(model, limits.nc, dict(enumerate(limits.names)))
    chosen = run_options(settings, workload.name, weights_path=weights_file(settings))
    trainer = workload.train_step(
        model,
        device=device,
        amp=settings.amp,
        ema=True,
        channels_last=training_channels_last(settings),
        options=chosen.options,
    )
    boxes = limits.boxes_per_image
    return trainer, lambda batch: workload.probe_batch(
        batch, settings.imgsz, limits.nc, boxes_per_image=boxes
    )


def weights_file(settings: ProfileConfig) -> str | None:
    """The checkpoint file `--weights` names (cached or local), or None (random init)."""
    from libreyolo.workload.weights import resolve_weights

    try:
        path = resolve_weights(settings.model.weights, download=False).path
    except UsageError:  # what the model's load accepted resolves; nothing else has a config
        return None
    return os.fspath(path) if path is not None else None


def _validate(s: ProfileConfig) -> None:
    from libreyolo.workload.api import workload_of

    if s.mode.measures is not Mode.TRAIN:  # a caller's slip: the profile would record another mode
        raise ValueError(f"profile_training measures mode run; the config says {s.mode}")
    check_exec(s.exec, Mode.TRAIN, s.window.warmup)
    # A bad --variant, --max-labels or 1.6.0 key is refused before anything loads.
    check_variants(s)
    user_keys(s, workload_of(s.model.weights, s.model.family).name)
    if s.batch < 1 and s.batch != -1:
        raise UsageError(f"--batch must be 1 or more (or -1 for AutoBatch); got {s.batch}")
    if s.dataset.workers < 0:
        raise UsageError(f"--workers must be 0 or more; got {s.dataset.workers}")
    if s.imgsz < 32 or s.imgsz % 32:
        raise UsageError(f"--imgsz must be a multiple of 32, at least 32; got {s.imgsz}")


def check_window_fits(num_images: int, available: int, plan: WindowPlan, batch: int) -> None:
    """NoProfileError naming the numbers and the ways out when one epoch cannot hold the
    measured steps. The bare steps that calibrate the profiler's overhead never fail a run:
    `fit_calibration` trims them to what the epoch holds beside the measured ones."""
    needed = plan.num_measured
    if available >= needed:
        return
    raise NoProfileError(
        f"the dataset has {num_images} images: {available} batches of {batch} per epoch, "
        f"but the {needed} measured steps need {needed} batches in one epoch",
        hint="use a larger dataset, fewer --steps, or a smaller --batch",
    )


def capped_workers(workers: int, plan: WindowPlan) -> tuple[int, str | None]:
    """`workers`, at most one per batch the run loads (warmup, measured and calibration steps:
    a worker more would fork and never load a batch), and the note saying so when capped."""
    loaded = plan.num_total
    if workers <= loaded:
        return workers, None
    parts = [f"{plan.num_warmup} warmup", f"{plan.num_measured} measured"]
    if plan.num_bare:
        parts.append(f"{plan.num_bare} calibration")
    return loaded, (
        f"--workers {workers} capped to {loaded}: the run loads {loaded} batches "
        f"({' + '.join(parts)})"
    )


def check_synthetic_window(data: str, plan: WindowPlan, batch: int) -> str | None:
    """For the built-in synthetic set: UsageError, before anything is drawn, for a window it
    cannot hold; else the line announcing a set about to be drawn (None when it is cached)."""
    from libreyolo.workload.data import synthetic
    from libreyolo.workload.data.dataset_config import datasets_dir, is_generated

    if not is_generated(data):
        return None
    synthetic.check_window_images(plan.num_measured, batch)
    num_train = synthetic.train_images_for(plan.num_total, batch)
    folder = synthetic.pending_draw(datasets_dir(), num_train)
    if folder is None:
        return None
    return f"drawing the synthetic dataset once: {num_train} train images into {folder}"


def skipped_updates_note(num_skipped: int, num_measured: int) -> str:
    """What GradScaler's skipped updates mean for the measured step time."""
    return (
        f"AMP: GradScaler skipped the optimizer update of {num_skipped} of the {num_measured} "
        "measured steps (inf/NaN fp16 gradients): those steps did no update, so the optimizer "
        "phase reads short; more --warmup lets the loss scale settle first"
    )


def _epoch_batches(
    loader: Iterable[Any], plan: WindowPlan, available: int, notes: list[str]
) -> Generator[Any, None, None]:
    """Batches for every iteration; epochs end only inside warmup, never inside the window.

    A generator, so each loader restart happens inside the `next()` timed as `dataload`.
    """
    epoch, left = iter(loader), available
    for iteration in range(plan.num_total):
        restart = left == 0 or (iteration == plan.num_warmup and left < plan.num_after_warmup)
        if restart:
            if iteration == plan.num_warmup:
                notes.append(
                    "the window starts a new epoch: its first dataload restarts the loader"
                )
            epoch, left = iter(loader), available
        left -= 1
        yield next(epoch)


def profile_training(
    cfg: ProfileConfig,
    *,
    on_progress: Progress | None = None,
    into: StagedRun | None = None,
    notes: Sequence[str] = (),
) -> tuple[Profile, Path]:
    """Measure training as `cfg` (mode run) says, save `<project>/run/profile.json`; returns
    (profile, its path). The profile's `run.config` is `cfg`, resolved; what the run made of
    it (the batch AutoBatch fitted, the workers it capped) are the run's own fields.

    With `into`, measure into that staged set and leave the save and commit to its owner.
    `notes` are the caller's own about this run (e.g. a rounded --imgsz): the profile's list
    starts with them. `cfg.threads` holds for the whole measurement; torch's count is restored
    after; without it, the count 1.6.0's trainer would take (`training_threads`)."""
    opening = list(notes)
    threads = cfg.threads if cfg.threads is not None else training_threads(opening)
    with intra_op_threads(threads):
        return _profile_training(cfg, on_progress, into, opening)


def _profile_training(
    settings: ProfileConfig,
    on_progress: Progress | None,
    into: StagedRun | None,
    prior_notes: Sequence[str],
) -> tuple[Profile, Path]:
    from libreyolo.workload.train import skipped_updates

    baseline_rss = own_rss_bytes()  # before anything of the run is built or loaded
    plan = plan_window(settings.window.warmup, settings.window.steps, measured_flag="--steps")
    device = resolve_device(settings.device.name)
    select_device(device)
    _validate(settings)
    batch, fitted_note, spec = _dataset_spec(settings, device, plan, on_progress)
    batch //= world_size()  # the global batch, split as `libreyolo train` splits it
    dtype = math_dtype(device, torch.float16 if settings.amp else None)  # the step's autocast
    compute_notes: list[str] = []
    # Before the weights load: the GEMM's operands must not count in the window's peaks.
    with stage("calibrate peak", on_progress, hint="check the device"):
        peaks = device_peaks(device, device_name(device), dtype, compute_notes)
    loaded = _load(settings, spec, device, batch, on_progress)
    check_window_fits(loaded.num_images, loaded.available, plan, batch)
    plan, calibration_note = fit_calibration(plan, loaded.available)
    workers, workers_note = capped_workers(settings.dataset.workers, plan)

    notes = _opening_notes(prior_notes, loaded, (calibration_note, fitted_note, workers_note))
    warn_if_crowded(workers, device, notes)
    notes += loaded.weight_notes
    trainer, channels_last = _trainer(settings, loaded, device, notes, on_progress)
    notes += compute_notes
    flops = _count_flops(loaded, settings.imgsz, notes, on_progress)
    loader = _loader(settings, loaded, device, workers, on_progress)
    if settings.amp and not trainer.amp_effective:
        notes.append(f"AMP has no effect on {device.type}: the step ran in float32")
    ranks = world_size()
    if ranks > 1:
        notes += _distributed(trainer, loaded.workload.name, ranks)
    with staged(set_dir(settings.project, "run"), into) as run:
        measured = _measure(settings, trainer, loaded, loader, plan, device, notes, on_progress)
        notes += measured.window.notes
        skipped = plan.measured_indices(skipped_updates(trainer))
        if skipped:
            notes.append(skipped_updates_note(len(skipped), plan.num_measured))
        trace = analysed_trace(measured.recorder, run, measured.window.phase_ms, device, notes)
        # The window's own figures are read before any work after it (a trial's forward must
        # not count as a recompile in the window).
        ran = execution(
            settings.exec, channels_last=channels_last, compiled=measured.compiled(settings.exec)
        )
        trials, tensors = _after_window(settings, trainer, loaded, device, notes, on_progress)
        window = measured.window
        energy = window_energy(window.energy, batch * plan.num_unsynced)  # the metered images
        profile = assemble_profile(
            kind=Mode.TRAIN,
            info=_run_info(settings, loaded, device, workers, trainer),
            device=device,
            plan=plan,
            samples=Samples(steps=window.steps, bare_ms=window.bare_ms, amp_skipped_steps=skipped),
            trace=trace,
            trace_kept=run.path(TRACE_NAME).is_file(),
            host=window.host,
            device_memory=measured.memory,
            host_memory=with_baseline(window.host_memory, baseline_rss),
            compute=Compute(math_dtype=dtype, flops=flops, peaks=peaks, energy=energy),
            notes=notes,
            execution=ran,
            variant_trials=trials,
            tensor_memory=tensors,
        )
        return profile, conclude(run, profile, commit=into is None)


def _distributed(trainer: TrainRunner, family: str, ranks: int) -> list[str]:
    """The step made one rank of `ranks` (SyncBatchNorm where it can, DDP), and its notes."""
    from libreyolo.workload.distributed import Distributable, distribute, rank

    if not hasattr(trainer, "forward_model"):
        raise UsageError(f"the {family} family's training step cannot run on several ranks")
    notes = distribute(cast("Distributable", trainer), sync_bn=True)
    return [f"rank {rank()} of {ranks}: DDP as libreyolo 1.6.0 wraps the model", *notes]


def _after_window(
    settings: ProfileConfig,
    trainer: TrainRunner,
    loaded: _TrainingInputs,
    device: torch.device,
    notes: list[str],
    on_progress: Progress | None,
) -> tuple[list[VariantTrial], TensorMemory | None]:
    """The variant trials and tensor memory, each on steps of its own after the window; not
    on several ranks, where their extra steps would enter the world's collectives."""
    if world_size() > 1:
        notes.append(
            "variant trials and tensor memory by category not measured on several ranks "
            "(--nproc 1 measures them)"
        )
        return [], None
    with stage("time variants", on_progress, hint="a family's variant pairs failed: report it"):
        trials = time_variants(trainer, lambda: _first_batch(loaded), device, notes)
    with stage("track memory", on_progress, hint="report it; --exec eager tracks it"):
        tensors = _tensor_memory(settings, trainer, loaded, notes)
    return trials, tensors


def _tensor_memory(
    settings: ProfileConfig, trainer: TrainRunner, loaded: _TrainingInputs, notes: list[str]
) -> TensorMemory | None:
    """One more step, untimed, with its tensors counted by category; None (and a note) where
    they cannot be: a compiled step's kernels run outside the dispatcher that counts them."""
    if ExecMode(settings.exec.name) is not ExecMode.eager:
        notes.append(
            f"tensor memory by category not tracked under --exec {settings.exec.name} "
            "(compiled kernels bypass the tracker); --exec eager tracks it"
        )
        return None
    # The probes are the run's first images: each sample is decoded and augmented once.
    samples = _first_samples(loaded, max(loaded.batch, *probe_batches(loaded.batch)))
    collate = loaded.workload.collate
    probes = [(n, collate(samples[:n])) for n in probe_batches(loaded.batch)]
    tracked = track_step(
        trainer,
        collate(samples[: loaded.batch]),
        imgsz=settings.imgsz,
        num_images=loaded.batch,
        probes=probes,
    )
    if not tracked.probes:
        batches = " and ".join(str(n) for n, _ in probes)
        notes.append(f"no memory prediction: a probe step at batch {batches} ran out of memory")
    return tracked


def _first_batch(loaded: _TrainingInputs) -> object:
    """The epoch's first `batch` samples, collated: real, augmented data for the trials after
    the window (the window's own batches are gone with its loader)."""
    return loaded.workload.collate(_first_samples(loaded, loaded.batch))


def _first_samples(loaded: _TrainingInputs, count: int) -> list[Any]:
    return [loaded.dataset[index] for index in range(count)]


def _dataset_spec(
    settings: ProfileConfig,
    device: torch.device,
    plan: WindowPlan,
    on_progress: Progress | None,
) -> tuple[int, str | None, DatasetSpec]:
    """The batch (AutoBatch's fit under `--batch -1`, and its note) and the dataset resolved
    for a window of that batch."""
    from libreyolo.workload.data.dataset_config import resolve_dataset

    fitted_note, batch, data = None, settings.batch, settings.dataset.name_or_path
    if batch == -1:  # first: the synthetic set is generated to the fitted batch
        with stage("fit batch", on_progress, hint="pass an explicit --batch"):
            batch, fitted_note = _fit_batch(settings, device, plan)
    drawing = check_synthetic_window(data, plan, batch)
    if drawing:
        warnings.warn(drawing, Note, stacklevel=3)
    with stage("build data", on_progress, hint="check the dataset YAML, images and labels"):
        spec = resolve_dataset(data, window_batches=plan.num_total, batch=batch)
    return batch, fitted_note, spec


@dataclasses.dataclass(frozen=True)
class _TrainingInputs:
    """The model and the dataset the window trains on, and what loading them found."""

    workload: Workload
    model: torch.nn.Module
    memory_before: AllocatorStats  # the allocator's counters before the window's work
    size: str  # the size the checkpoint describes
    nc: int  # the checkpoint's classes
    spec: DatasetSpec
    batch: int
    random_init: bool
    dataset: Dataset[Any]
    num_images: int
    available: int  # whole batches in one epoch
    weight_notes: list[str]
    options: RunOptions  # the step's 1.6.0 keys and departures, resolved against the file
    sampler: Sampler[int] | None  # this rank's shard on several ranks; None: the whole set


def _load(
    settings: ProfileConfig,
    spec: DatasetSpec,
    device: torch.device,
    batch: int,
    on_progress: Progress | None,
) -> _TrainingInputs:
    """The weights, then the dataset: the family (from the file) decides its transforms."""
    from libreyolo.workload.api import load_workload_model
    from libreyolo.workload.data.loader import batches_available
    from libreyolo.workload.distributed import shard

    weight_notes: list[str] = []  # they keep their place after the data's notes
    with stage("load weights", on_progress, hint="check --weights and --size"):
        workload, model = load_workload_model(
            settings.model.weights,
            settings.model.size,
            device,
            weight_notes,
            settings.model.family,
        )
        memory_before = reset_peaks(device)
        described = workload.describe(model)
        chosen = run_options(settings, workload.name, weights_path=weights_file(settings))
    with stage("build data", on_progress, hint="check the dataset YAML, images and labels"):
        dataset = workload.train_dataset(
            spec, settings.imgsz, seed=SEED, cache=settings.dataset.cache, options=chosen.options
        )
    # On several ranks each draws its shard of every epoch, as 1.6.0's DistributedSampler.
    sampler = shard(dataset, SEED) if world_size() > 1 else None  # type: ignore[arg-type]
    drawn = dataset if sampler is None else sampler
    return _TrainingInputs(
        workload=workload,
        model=model,
        memory_before=memory_before,
        size=described.size,
        nc=described.nc,
        spec=spec,
        batch=batch,
        random_init=bool(getattr(model, "random_init", False)),
        dataset=dataset,
        num_images=len(dataset),  # type: ignore[arg-type]
        available=batches_available(drawn, batch),  # type: ignore[arg-type]
        sampler=sampler,
        weight_notes=[*weight_notes, *chosen.notes],
        options=chosen,
    )


def _opening_notes(
    prior_notes: Sequence[str], loaded: _TrainingInputs, planned: tuple[str | None, ...]
) -> list[str]:
    """The caller's notes, the dataset's skipped files, then what planning the window changed
    (calibration, fitted batch, capped workers: the last is also warned now)."""
    notes = [*prior_notes]
    notes += [f"dataset: skipped {line}" for line in getattr(loaded.dataset, "issues", [])[:5]]
    notes += [note for note in planned if note]
    workers_note = planned[-1]
    if workers_note:
        warnings.warn(workers_note, Note, stacklevel=3)
    return notes


def _trainer(
    settings: ProfileConfig,
    loaded: _TrainingInputs,
    device: torch.device,
    notes: list[str],
    on_progress: Progress | None,
) -> tuple[TrainRunner, bool]:
    """The family's training step for the dataset's classes, and whether it runs NHWC."""
    spec = loaded.spec
    with stage("load weights", on_progress, hint="check --weights and --size"):
        if loaded.nc != spec.nc:
            loaded.workload.reset_classes(loaded.model, spec.nc, dict(enumerate(spec.names)))
            notes.append(f"class layers reset from the checkpoint's classes to {spec.nc}")
        channels_last = training_channels_last(settings)  # 1.6.0's NCHW unless opted in
        trainer = loaded.workload.train_step(
            loaded.model,
            device=device,
            amp=settings.amp,
            channels_last=channels_last,
            options=loaded.options.options,
        )
    return trainer, channels_last


def _count_flops(
    loaded: _TrainingInputs, imgsz: int, notes: list[str], on_progress: Progress | None
) -> Flops | None:
    """The training step's FLOPs; None (and a note) when the count fails."""
    with stage("count FLOPs", on_progress, hint="check the model"):
        # `train_step` put the model (the same module) in train mode: PGI's auxiliary branch
        # and the heads' training outputs are what the step computes.
        return count_model_flops(
            loaded.model, batch=loaded.batch, imgsz=imgsz, training=True, notes=notes
        )


def _loader(
    settings: ProfileConfig,
    loaded: _TrainingInputs,
    device: torch.device,
    workers: int,
    on_progress: Progress | None,
) -> DataLoader[Any]:
    """The window's loader, once the memory check has found that the host and device hold a
    step and the loader's prefetched batches."""
    from libreyolo.workload.data.loader import PREFETCH_FACTOR, build_loader, pins_for

    batch, nc = loaded.batch, loaded.spec.nc
    with stage("check memory", on_progress, hint="lower --batch or --imgsz"):
        check_training(
            loaded.model,
            lambda side: loaded.workload.probe_batch(1, side, nc).images.to(device),
            device=device,
            batch=batch,
            imgsz=settings.imgsz,
            workers=workers,
            prefetch_factor=PREFETCH_FACTOR,
            pinned=pins_for(device),
        )
    return build_loader(
        loaded.dataset,
        batch=batch,
        device=device,
        workers=workers,
        seed=SEED,
        collate_fn=loaded.workload.collate,
        sampler=loaded.sampler,
    )


def _measure(
    settings: ProfileConfig,
    trainer: TrainRunner,
    loaded: _TrainingInputs,
    loader: DataLoader[Any],
    plan: WindowPlan,
    device: torch.device,
    notes: list[str],
    on_progress: Progress | None,
) -> MeasuredWindow:
    """Under --exec compile, one probe step compiles the model before the warmup; then the
    window: each iteration loads a batch and trains one step on it."""
    from libreyolo.workload.data.loader import worker_pids

    watch, compile_s = None, 0.0
    if ExecMode(settings.exec.name) is ExecMode.compile:
        with stage("torch.compile", on_progress, hint="try --exec eager"):
            watch, compile_s = _compile_step(
                trainer, loaded.model, settings, loaded.workload, loaded.batch, loaded.spec.nc
            )
            notes.append(COMPILE_STEP_NOTE)
    recorder = TraceRecorder(plan, device.type, enabled=True)
    batches = _epoch_batches(loader, plan, loaded.available, notes)

    def train_iteration(iteration: int, timer: PhaseTimer) -> float:
        with timer(DATALOAD):
            batch = next(batches)
        loaded_at = time.perf_counter()  # the unsynced dataload_ms ends here
        losses = trainer.step(batch, timer)
        # Reading the loss back is what a training loop does every step (1.6.0 called
        # .item()); it also ends the step's device work, so wall time is not CPU run-ahead.
        losses["total"]
        return loaded_at

    with stage("measure", on_progress, hint="try a smaller --batch or --imgsz, or --workers 0"):
        try:
            window = run_window(
                plan,
                device,
                window_marker(train_iteration, plan.num_warmup, watch),
                recorder,
                on_progress,
                phases=TRAIN_PHASES,
                worker_pids=lambda: worker_pids(loader),
                meter=energy_meter(device),
                history=AllocationHistory(device, snapshot_path(settings.project, "run")),
            )
        finally:
            batches.close()  # stops loader workers before the trace is analysed
        memory = device_memory(device, loaded.memory_before)
    return MeasuredWindow(
        window=window, recorder=recorder, memory=memory, watch=watch, first_call_s=compile_s
    )


def _run_info(
    settings: ProfileConfig,
    loaded: _TrainingInputs,
    device: torch.device,
    workers: int,
    trainer: TrainRunner,
) -> RunInfo:
    spec = loaded.spec
    return RunInfo(
        mode=Mode.TRAIN.noun,
        model=loaded.workload.model_name(loaded.size),
        family=loaded.workload.name,
        weights=os.fspath(settings.model.weights),
        random_init=loaded.random_init,
        device=str(device),
        batch=loaded.batch,
        imgsz=settings.imgsz,
        amp=trainer.amp_effective,
        num_images=loaded.num_images,
        dataset_yaml=os.fspath(spec.yaml_path) if spec.yaml_path else None,
        batches_per_epoch=loaded.available,
        num_workers=workers,
        config=as_plain_dict(settings),
        # A runner that does not say how many rows it assigns over (a third-party family's)
        # records none.
        max_labels=getattr(trainer, "target_rows", None),
        variants=recorded_variants(settings),
        train_keys=loaded.options.resolved.keys.as_dict(),
        adopted_keys=list(loaded.options.resolved.adopted),
    )


# The compile's own step trains on a probe batch: its update is not a window step.
COMPILE_STEP_NOTE = (
    "torch.compile: one step on a random probe batch compiled the forward and backward before "
    "the warmup (compile_s); its update is not counted"
)


def _compile_step(
    trainer: Any,
    model: torch.nn.Module,
    s: ProfileConfig,
    workload: Workload,
    batch: int,
    nc: int,
) -> tuple[CompileWatch, float]:
    """Compile `model` in place and run one step on a probe batch of the window's shape (the
    first call compiles forward and backward); the watch and that step's wall seconds."""
    from libreyolo.workload.train import UpdateRecord

    compile_in_place(model, s.exec)
    watch = CompileWatch.start()
    probe = workload.probe_batch(batch, s.imgsz, nc)
    # Reading the loss back ends the step's device work, as in the window.
    seconds = first_call(lambda: trainer.step(probe)["total"], "torch.compile")
    watch.mark_first_call()
    if isinstance(getattr(trainer, "updates", None), UpdateRecord):
        trainer.updates = UpdateRecord()  # the probe step's GradScaler flag is not the window's
    return watch, seconds
