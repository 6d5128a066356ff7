"""`libreyolo profile run --trainer PY`: libreyolo 1.x's own training, measured in its own
environment, saved as the usual profile.

Role: check the config (settings.py), resolve the data 1.x will read (the built-in synthetic
set is drawn here, big enough for the window), run the probe (process.py) and, as it
reports, decide the window once 1.x has built its loader (the same plan as this package's
own window: warmup, unsynced traced half, bare calibration, synced half; the bare steps
trimmed to what an epoch holds beside the measured ones; warmup extended so the window
starts on an epoch when the current one cannot hold it, since 1.x's loader cannot be
restarted from outside) and sample the host around each measured step from outside (the
probe's threads and its DataLoader workers, its peak memory, the GPU's energy). Then the
probe's trace is analysed and the profile assembled and committed like any other: every
reader, compare, report and sweep works on it. Must not: import 1.x (another environment's),
or derive metrics or verdicts (`analysis.build.finalize`).
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import ProfileConfig
from libreyolo.document.mode import Mode
from libreyolo.document.model import (
    Compute,
    Environment,
    Host,
    HostMemory,
    Memory,
    Profile,
    RunInfo,
    Samples,
    StepSample,
    Trainer,
)
from libreyolo.errors import TrainerFailedError
from libreyolo.known_trainer import remember_trainer
from libreyolo.measure.artifacts import TRACE_NAME, StagedRun, set_dir
from libreyolo.measure.assemble import analyse_exported, assemble_profile, conclude, staged
from libreyolo.measure.energy import EnergyReading, energy_meter, window_energy
from libreyolo.measure.host import HostSampler, StepHost
from libreyolo.measure.memory import allocator_memory
from libreyolo.measure.procfs import child_pids
from libreyolo.measure.rss import WindowPeakRss
from libreyolo.measure.stages import Progress, stage
from libreyolo.measure.train import check_window_fits
from libreyolo.measure.trainer.process import run_probe
from libreyolo.measure.trainer.protocol import ProbeHello, ProbeReady, ProbeResult
from libreyolo.measure.trainer.settings import (
    TrainerCommand,
    check_trainer_config,
    trainer_command,
)
from libreyolo.measure.window import WindowPlan, fit_calibration, plan_window

NO_FLOPS_NOTE = (
    "FLOPs and MFU: not counted for libreyolo 1.x's trainer (its model lives in another "
    "environment)"
)


def profile_trainer(
    cfg: ProfileConfig,
    *,
    on_progress: Progress | None = None,
    into: StagedRun | None = None,
    notes: Sequence[str] = (),
) -> tuple[Profile, Path]:
    """Measure libreyolo 1.x's training as `cfg` says (`cfg.trainer` set) and save
    `<project>/run/profile.json`; returns (profile, its path). With `into`, measure into that
    staged set and leave the commit to its owner."""
    check_trainer_config(cfg)
    plan = plan_window(cfg.window.warmup, cfg.window.steps, measured_flag="--steps")
    with stage("build data", on_progress, hint="check the dataset YAML, images and labels"):
        data = trainer_data(cfg.dataset.name_or_path, plan, cfg.batch)
    command = trainer_command(cfg, data)
    with (
        staged(set_dir(cfg.project, "run"), into) as run,
        tempfile.TemporaryDirectory(prefix="libreyolo-trainer-") as scratch,
    ):
        watch = ProbeWatch(plan, on_progress)
        probe = run_probe(
            command, Path(scratch), run.path(TRACE_NAME), watch, timeout_s=cfg.trainer_timeout_s
        )
        ready, result = probe.ready, probe.result
        if ready is None or result is None:  # `done` comes after both
            raise TrainerFailedError("the trainer probe ended its window without its report")
        run_notes = [*notes, *watch.notes, *_result_notes(result, ready, watch.plan)]
        run_notes.append(NO_FLOPS_NOTE)
        trace_path = run.path(TRACE_NAME) if result.trace else None
        if result.trace_error:
            run_notes.append(f"no trace: torch could not export it ({result.trace_error})")
        samples = _steps(result, watch.step_hosts)
        trace = analyse_exported(
            trace_path, run, _phase_walls(samples), ready.device_type, run_notes
        )
        energy = window_energy(watch.energy, (ready.batch or 0) * watch.plan.num_unsynced)
        amp_on_gpu = ready.amp and ready.device_type == "cuda"
        profile = assemble_profile(
            kind=Mode.TRAIN,
            info=_run_info(cfg, command, probe.hello, ready, watch.pid),
            device=torch.device("cpu"),  # unused: the environment is the probe's
            plan=watch.plan,
            samples=Samples(
                steps=samples,
                bare_ms=list(result.bare_ms),
                amp_skipped_steps=list(result.amp_skipped_steps),
            ),
            trace=trace,
            trace_kept=run.path(TRACE_NAME).is_file(),
            host=watch.host,
            device_memory=_device_memory(ready, result),
            host_memory=watch.host_memory,
            compute=None
            if energy is None
            else Compute(math_dtype="fp16" if amp_on_gpu else "fp32", energy=energy),
            notes=run_notes + watch.window_notes,
            environment=_environment(probe.hello, ready),
        )
        path = conclude(run, profile, commit=into is None)
    remember_trainer(command.python)  # names its `libreyolo` when `libreyolo train` is typed here
    return profile, path


def trainer_data(data: str, plan: WindowPlan, batch: int) -> str:
    """The dataset as 1.x's `data=` will read it: a YAML path made absolute, the built-in
    synthetic set drawn (once, cached) big enough for the window, else the name as given
    (1.x resolves its own names)."""
    from libreyolo.workload.data.dataset_config import is_generated, resolve_dataset

    given = Path(data).expanduser()
    if given.is_file():
        return str(given.resolve())
    if given.is_dir() or is_generated(data):
        spec = resolve_dataset(
            data, window_batches=plan.num_total, batch=batch if batch > 0 else None
        )
        if spec.yaml_path is not None:
            return str(spec.yaml_path)
    return data


@dataclasses.dataclass
class ProbeWatch:
    """The probe's events as they arrive: the plan decided at `ready`, progress, and the host
    sampled from outside around each measured iteration (the probe's process and its
    DataLoader workers), as `loop.run_window` samples its own process."""

    plan: WindowPlan
    on_progress: Progress | None
    notes: list[str] = dataclasses.field(default_factory=list)
    window_notes: list[str] = dataclasses.field(default_factory=list)
    step_hosts: dict[int, StepHost] = dataclasses.field(default_factory=dict)
    host: Host | None = None
    host_memory: HostMemory | None = None
    energy: EnergyReading | None = None
    _pid: int = 0
    _sampler: HostSampler | None = None
    _peak: WindowPeakRss | None = None
    _meter: Any = None
    _threads: int | None = None

    @property
    def pid(self) -> int:
        """The probe's process id (0 before it started)."""
        return self._pid

    def started(self, pid: int) -> None:
        self._pid = pid
        if self.on_progress is not None:
            self.on_progress("start libreyolo train", 0, 1)

    def hello(self, info: ProbeHello) -> None:
        if self.on_progress is not None:
            self.on_progress("libreyolo train setup", 0, 1)

    def ready(self, info: ProbeReady) -> dict[str, Any]:
        """The plan for what 1.x built (or TrainerFailedError when an epoch cannot hold it)."""
        per_epoch, batch = info.batches_per_epoch, info.batch or 0
        check_window_fits(info.num_images or 0, per_epoch, self.plan, batch)
        plan, calibration_note = fit_calibration(self.plan, per_epoch)
        plan, accumulate_note = round_to_accumulation(plan, info.accumulate or 1)
        plan, epoch_note = start_on_epoch(plan, per_epoch)
        self.plan = plan
        self.notes += [n for n in (calibration_note, accumulate_note, epoch_note) if n]
        threads = info.intra_op_threads or 0
        self._sampler = HostSampler(
            worker_pids=self._worker_pids, intra_op_threads=lambda: threads, pid=self._pid
        )
        self._peak = WindowPeakRss(self._pid)
        cuda = info.device_type == "cuda"
        self._meter = energy_meter(torch.device(info.device)) if cuda else None
        if plan.num_warmup == 0:
            self._window_begins()
        return {
            "warmup": plan.num_warmup,
            "measured": plan.num_measured,
            "unsynced": plan.num_unsynced,
            "bare": plan.num_bare,
            "traced": plan.traced,
        }

    def iteration(self, index: int) -> None:
        plan, sampler = self.plan, self._sampler
        if sampler is None:
            raise TrainerFailedError("the trainer probe reported a step before its plan")
        if plan.is_measured(index):
            self.step_hosts[index] = sampler.end()
        if index == plan.num_traced - 1 and self._meter is not None:
            self.energy, note = self._meter.stop()
            self.window_notes += [note] if note else []
        if index == plan.num_warmup - 1:
            self._window_begins()
        elif plan.is_measured(index + 1):
            sampler.begin(after_sampled=plan.is_measured(index))
        if index == plan.num_total - 1:
            self._window_ends()
        if self.on_progress is not None:
            self.on_progress(*plan.progress(index))

    def _window_begins(self) -> None:
        if self._meter is not None:
            self._meter.start()
        if self._peak is not None:
            self._peak.start()
        if self._sampler is not None:
            self._sampler.begin(after_sampled=False)

    def _window_ends(self) -> None:
        if self._peak is not None:
            self.host_memory, note = self._peak.end()
            self.window_notes += [note] if note else []
        if self._sampler is not None:
            self.host = self._sampler.window()
        if self._meter is not None:
            self._meter.close()

    def _worker_pids(self) -> tuple[int, ...]:
        """The probe's children: its DataLoader workers."""
        try:
            with open(f"/proc/{self._pid}/task/{self._pid}/children", encoding="ascii") as f:
                return child_pids(f.read())
        except OSError:
            return ()


def round_to_accumulation(plan: WindowPlan, accumulate: int) -> tuple[WindowPlan, str | None]:
    """With gradient accumulation over `accumulate` batches, every part of the window a
    whole number of optimizer steps (1.x's trainer calls the hooks once per batch)."""
    if accumulate <= 1:
        return plan, None

    def up(count: int) -> int:
        return math.ceil(count / accumulate) * accumulate

    unsynced = up(plan.num_unsynced)
    synced = up(max(1, plan.num_synced))
    rounded = dataclasses.replace(
        plan,
        num_warmup=up(plan.num_warmup),
        num_measured=unsynced + synced,
        num_bare=up(plan.num_bare),
        latency_runs=None,
    )
    if rounded == plan:
        return plan, None
    return rounded, (
        f"window rounded to whole optimizer steps of {accumulate} accumulated batches: "
        f"warmup {rounded.num_warmup}, {unsynced} unsynced + {synced} synced steps"
    )


def start_on_epoch(plan: WindowPlan, batches_per_epoch: int) -> tuple[WindowPlan, str | None]:
    """The plan with warmup extended so the window (measured and bare steps) starts on an
    epoch when the rest of the current one cannot hold it: an epoch boundary inside would
    add the loader's restart (and any validation) to the steps."""
    into_epoch = plan.num_warmup % batches_per_epoch
    if into_epoch + plan.num_after_warmup <= batches_per_epoch or into_epoch == 0:
        return plan, None
    warmup = plan.num_warmup + batches_per_epoch - into_epoch
    return dataclasses.replace(plan, num_warmup=warmup), (
        f"warmup extended from {plan.num_warmup} to {warmup} steps: the window starts on an "
        f"epoch (one holds {batches_per_epoch} batches), so its first dataload includes the "
        "loader's restart"
    )


def _steps(result: ProbeResult, hosts: dict[int, StepHost]) -> list[StepSample]:
    """The probe's samples, each with the host numbers sampled around its iteration."""
    steps = []
    for sample in result.samples:
        host = hosts.get(sample.iteration, StepHost())
        steps.append(
            StepSample(
                index=sample.index,
                synced=sample.synced,
                wall_ms=sample.wall_ms,
                dataload_ms=sample.dataload_ms,
                phase_ms=dict(sample.phase_ms),
                cpu_ms=host.cpu_ms,
                cpu_wait_ms=host.cpu_wait_ms,
                num_involuntary_switches=host.num_involuntary_switches,
            )
        )
    return steps


def _phase_walls(steps: list[StepSample]) -> dict[str, list[float]]:
    walls: dict[str, list[float]] = {}
    for step in steps:
        if step.synced:
            for name, wall in step.phase_ms.items():
                walls.setdefault(name, []).append(wall)
    return walls


def _result_notes(result: ProbeResult, ready: ProbeReady, plan: WindowPlan) -> list[str]:
    """What the probe saw that the numbers depend on."""
    notes = []
    short = [s.index for s in result.samples if s.images not in (None, ready.batch)]
    if short:
        notes.append(
            f"{len(short)} measured steps had fewer images than the batch of {ready.batch} (an "
            "epoch's last batch): img/s counts the batch"
        )
    starts = [i for i in result.epoch_starts if plan.num_warmup < i]
    if starts:
        notes.append(
            f"an epoch began inside the window (at iteration {starts[0]}): its first step "
            "includes the loader's restart"
        )
    if len(ready.imgsz) == 2 and ready.imgsz[0] != ready.imgsz[1]:
        notes.append(f"libreyolo train used a {ready.imgsz[0]}x{ready.imgsz[1]} (HxW) input")
    return notes


def _run_info(
    cfg: ProfileConfig, command: TrainerCommand, hello: ProbeHello, ready: ProbeReady, pid: int
) -> RunInfo:
    return RunInfo(
        mode=Mode.TRAIN.noun,
        pid=pid or None,
        model=ready.model,
        family=ready.family,
        weights=cfg.model.weights,
        device=ready.device,
        batch=ready.batch or None,
        imgsz=max(ready.imgsz) if ready.imgsz else cfg.imgsz,
        amp=ready.amp,
        num_images=ready.num_images,
        dataset_yaml=ready.data,
        batches_per_epoch=ready.batches_per_epoch or None,
        num_workers=ready.num_workers,
        config=as_plain_dict(cfg),
        trainer=Trainer(
            python=command.python,
            libreyolo=hello.libreyolo,
            torch=hello.torch,
            argv=list(command.words),
            command=command.command_line(),
        ),
    )


def _environment(hello: ProbeHello, ready: ProbeReady) -> Environment:
    name = ready.device_name
    return Environment(
        python=hello.python_version,
        platform=hello.platform,
        num_cpus=ready.num_cpus,
        num_threads=ready.intra_op_threads,
        torch=hello.torch,
        cuda=hello.cuda,
        device_name=name,
        gpu_names=[name] if name and ready.device_type == "cuda" else [],
        device_memory_bytes=ready.device_memory_bytes,
    )


def _device_memory(ready: ProbeReady, result: ProbeResult) -> Memory | None:
    if ready.device_type != "cuda" or not result.memory_after:
        return None
    return allocator_memory(result.memory_before, result.memory_after)
