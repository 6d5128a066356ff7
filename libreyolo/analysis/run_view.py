"""What a report says about the run itself: the run header, the trials of a `--repeat` and the
memory figures. Pure: read from the profile, no I/O.

`summary --json` carries all three (`run`, `trials`, `memory`), so every number a report page
shows about the run is one a reader prints too.
"""

from __future__ import annotations

import msgspec

from libreyolo.analysis import stats
from libreyolo.analysis.device_memory import window_memory
from libreyolo.document.mode import Mode
from libreyolo.document.model import Profile, Trainer

TRIAL_METRICS = ("img_per_s", "step_ms", "latency_p50_ms", "latency_p99_ms")
MB = 1e6  # peak_vram_mb's unit (libreyolo 1.6.0: decimal megabytes)


class RunHeader(msgspec.Struct, frozen=True):
    mode: Mode
    model: str | None
    weights: str | None
    random_init: bool | None  # None: the profile does not say (bare traces, 1.6.0 files)
    device: str | None
    device_name: str | None
    batch: int | None
    imgsz: int | None
    amp: bool | None
    num_warmup: int
    num_measured: int
    num_unsynced: int
    num_synced: int
    num_bare: int
    tool_version: str
    created: str | None
    trace: str | None  # the Chrome trace next to the profile, relative to it
    # libreyolo 1.x's own trainer (`--trainer`): "libreyolo 1.6.0's own train (torch 2.14.1,
    # <python>)",
    # and its training as one shell line; None for this package's own step
    trainer: str | None = None
    train_command: str | None = None


class TrialRow(msgspec.Struct, frozen=True):
    index: int
    bound: str | None
    metrics: dict[str, float | None]  # TRIAL_METRICS
    pid: int | None = None  # the process that measured it (None: not recorded)


class TrialSpread(msgspec.Struct, frozen=True):
    metric: str
    mean: float | None
    sd: float | None  # sample standard deviation over the trials
    n: int


class MemoryView(msgspec.Struct, frozen=True):
    peak_allocated_mb: float | None
    peak_reserved_mb: float | None
    num_alloc_retries: int | None
    cuda_mallocs_per_step: float | None
    thrash: bool


def run_header(profile: Profile) -> RunHeader:
    """The run's identity: model, device, settings, window, tool and time."""
    run, window = profile.run, profile.window
    trainer = run.trainer
    return RunHeader(
        mode=profile.kind,
        model=run.model,
        weights=run.weights,
        random_init=run.random_init,
        device=run.device,
        device_name=profile.environment.device_name,
        batch=run.batch,
        imgsz=run.imgsz,
        amp=run.amp,
        num_warmup=window.num_warmup,
        num_measured=window.num_measured,
        num_unsynced=window.num_unsynced,
        num_synced=window.num_synced,
        num_bare=window.num_bare,
        tool_version=profile.tool.version,
        created=profile.created,
        trace=profile.artifacts.trace,
        trainer=None if trainer is None else _trainer_text(trainer),
        train_command=None if trainer is None else trainer.command,
    )


def _trainer_text(trainer: Trainer) -> str:
    return f"libreyolo {trainer.libreyolo}'s own train (torch {trainer.torch}, {trainer.python})"


def trial_rows(profile: Profile) -> tuple[TrialRow, ...]:
    """One row per `--repeat` trial (empty for a single window)."""
    return tuple(
        TrialRow(
            index=t.index,
            bound=t.bound,
            metrics={name: stats.as_number(t.metrics.get(name)) for name in TRIAL_METRICS},
            pid=t.pid,
        )
        for t in profile.trials
    )


def trial_spread(rows: tuple[TrialRow, ...]) -> tuple[TrialSpread, ...]:
    """Mean ± sample SD of each trial metric that every trial has (none below 2 trials)."""
    if len(rows) < 2:
        return ()
    spread = []
    for name in TRIAL_METRICS:
        values = [row.metrics[name] for row in rows]
        known = [v for v in values if v is not None]
        if len(known) == len(values):
            spread.append(TrialSpread(name, stats.mean(known), stats.sample_sd(known), len(known)))
    return tuple(spread)


def memory_view(profile: Profile) -> MemoryView | None:
    """Peak allocated/reserved device memory and the thrash signals; None when nothing about
    device memory was recorded (CPU runs, bare CPU traces). A CUDA run without a trace keeps
    the allocator's peaks."""
    mem = window_memory(profile)
    has_gpu = profile.trace is not None and profile.trace.has_gpu
    if mem is None or (
        mem.peak_allocated_bytes is None and mem.peak_reserved_bytes is None and not has_gpu
    ):
        return None
    return MemoryView(
        peak_allocated_mb=_mb(mem.peak_allocated_bytes),
        peak_reserved_mb=_mb(mem.peak_reserved_bytes),
        num_alloc_retries=mem.num_alloc_retries,
        cuda_mallocs_per_step=stats.as_number(profile.metrics.get("cuda_mallocs_per_step")),
        thrash=bool(profile.metrics.get("memory_pressure")),
    )


def _mb(num_bytes: int | None) -> float | None:
    return None if num_bytes is None else round(num_bytes / MB, 1)
