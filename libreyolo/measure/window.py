"""The measured window: warmup, then unsynced iterations and synced ones.

Role: plan how many iterations run and which are timed how. The honest-timing design of
libreyolo 1.6.0 stays: **the verdict comes from unsynced steps, phase composition from synced
steps.** Unsynced iterations add no device syncs, so their wall time shows real CPU/GPU overlap
(latency, step time, img/s, dataload stall); synced ones sync around each phase and give its
wall time (composition only). Training (`--steps N`) splits its N measured steps in half, as
1.6.0 did. Inference (`--runs N`) measures N unsynced runs, every one a latency sample (so the
default 100 gives a p99 from 100 samples, and the trace holds all of them), then
`min(N // 2, MAX_STAGE_SPLIT)` (at least 1) synced runs for the stage split: medians of a few
stage walls are settled long before percentiles of the latency are.

The torch profiler records exactly the unsynced half, and the analyser uses all of its steps
(1.6.0 analysed only step markers 2..8, about three steps), so the trace's utilisation is not
diluted by the idle gaps the syncs create. When it does, `num_bare` more unsynced iterations
follow with the profiler off: their wall times, beside the traced ones of the same run, measure
what the profiler itself added (the overhead calibration stored in every profile). Must not run
or time anything itself.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from libreyolo.document.model import Window
from libreyolo.errors import UsageError
from libreyolo.kineto.logs import is_noise, kineto_error
from libreyolo.measure.failures import NO_SPACE

MIN_MEASURED = 2  # one unsynced and one synced iteration at least
MAX_BARE = 20  # a median of 20 bare iterations pins the overhead; more would only cost time
MAX_STAGE_SPLIT = 20  # synced inference runs: the stage medians need no more


@dataclass(frozen=True, slots=True)
class WindowPlan:
    """Iteration counts of one measurement; indices are 0-based over all iterations."""

    num_warmup: int
    num_measured: int
    num_bare: int = 0  # unsynced, profiler off, after the traced half (overhead calibration)
    traced: bool = False  # the unsynced half runs under the torch profiler
    latency_runs: int | None = None  # inference: the unsynced runs; None: half the measured

    @property
    def num_unsynced(self) -> int:
        if self.latency_runs is not None:
            return self.latency_runs
        return max(1, self.num_measured // 2)

    @property
    def num_after_warmup(self) -> int:
        """Iterations after warmup: measured plus calibration (the batches a run needs)."""
        return self.num_measured + self.num_bare

    @property
    def num_synced(self) -> int:
        return self.num_measured - self.num_unsynced

    def progress(self, iteration: int) -> tuple[str, int, int]:
        """(stage, done, total) after `iteration`: warmup first, then measured steps."""
        if iteration < self.num_warmup:
            return "warmup", iteration + 1, self.num_warmup
        return "measured step", iteration + 1 - self.num_warmup, self.num_after_warmup

    @property
    def num_total(self) -> int:
        return self.num_warmup + self.num_after_warmup

    @property
    def num_traced(self) -> int:
        """Profiler warmup + active steps: everything before the synced half."""
        return self.num_warmup + self.num_unsynced

    def is_warmup(self, iteration: int) -> bool:
        return iteration < self.num_warmup

    def is_bare(self, iteration: int) -> bool:
        return self.num_traced <= iteration < self.num_traced + self.num_bare

    def is_synced(self, iteration: int) -> bool:
        return iteration >= self.num_traced + self.num_bare

    def is_measured(self, iteration: int) -> bool:
        """A window iteration that becomes a sample: neither warmup nor overhead calibration."""
        return 0 <= iteration < self.num_total and not (
            self.is_warmup(iteration) or self.is_bare(iteration)
        )

    def sample_index(self, iteration: int) -> int:
        """The measured iteration's index among the measured ones (bare iterations skipped)."""
        return iteration - self.num_warmup - (self.num_bare if self.is_synced(iteration) else 0)

    def measured_indices(self, iterations: Iterable[int]) -> list[int]:
        """The sample indices of those `iterations` that are measured (warmup and bare dropped)."""
        return sorted(self.sample_index(i) for i in iterations if self.is_measured(i))

    def schedule(self) -> Callable[[int], Any]:
        """`torch.profiler.schedule`: warm up on the warmup iterations, record the unsynced half."""
        from torch.profiler import schedule

        return schedule(wait=0, warmup=self.num_warmup, active=self.num_unsynced, repeat=1)

    def document(self) -> Window:
        return Window(
            num_warmup=self.num_warmup,
            num_measured=self.num_measured,
            num_unsynced=self.num_unsynced,
            num_synced=self.num_synced,
            num_bare=self.num_bare,
            profiler_on=self.traced,
        )


def plan_window(
    warmup: int, measured: int, *, measured_flag: str = "--runs", traced: bool = True
) -> WindowPlan:
    """A WindowPlan, or UsageError for counts 1.6.0 silently clamped (a negative warmup, fewer
    than two measured iterations). A traced plan carries bare iterations to calibrate the
    profiler's overhead against."""
    if warmup < 0:
        raise UsageError(f"--warmup must be 0 or more; got {warmup}")
    if measured < MIN_MEASURED:
        raise UsageError(
            f"{measured_flag} must be at least {MIN_MEASURED} (one unsynced and one synced "
            f"iteration); got {measured}"
        )
    num_bare = min(max(1, measured // 2), MAX_BARE) if traced else 0
    return WindowPlan(num_warmup=warmup, num_measured=measured, num_bare=num_bare, traced=traced)


def plan_inference_window(warmup: int, runs: int, *, traced: bool = True) -> WindowPlan:
    """The window of `infer --runs RUNS`: RUNS unsynced runs (the latency samples, traced),
    their overhead calibration, then the synced runs of the stage split (module docstring)."""
    if warmup < 0:
        raise UsageError(f"--warmup must be 0 or more; got {warmup}")
    if runs < 1:
        raise UsageError(f"--runs must be 1 or more; got {runs}")
    synced = max(1, min(runs // 2, MAX_STAGE_SPLIT))
    num_bare = min(max(1, runs // 2), MAX_BARE) if traced else 0
    return WindowPlan(warmup, runs + synced, num_bare, traced, latency_runs=runs)


def fit_calibration(plan: WindowPlan, batches_per_epoch: int) -> tuple[WindowPlan, str | None]:
    """The plan with only as many bare iterations as one epoch holds beside the measured ones
    (calibration is ours, not the window's: it must never be what fails a run), and the note
    saying so when fewer than planned remain; the plan unchanged (no note) when all fit."""
    room = max(0, batches_per_epoch - plan.num_measured)
    if plan.num_bare <= room:
        return plan, None
    held = f"the dataset holds {batches_per_epoch} batches per epoch"
    if room == 0:
        note = f"profiler overhead not calibrated: {held}, the measured steps used them all"
    else:
        note = f"profiler overhead calibrated on {room} bare steps, not {plan.num_bare}: {held}"
    return dataclasses.replace(plan, num_bare=room), note


class TraceRecorder:
    """The torch profiler over the traced iterations, or a no-op when tracing is off.

    CPU activity always, CUDA activity only on CUDA; shapes, stacks and memory are off, as in
    1.6.0, to keep the profiler's own overhead out of the unsynced latency. Call `step()` once
    per traced iteration (warmup included) and `close()` once the unsynced half is done.

    libkineto writes its own lines (`USDT: ... profiler_start`) straight to file descriptor 2,
    past Python: every call into the profiler runs with fd 2 on a scratch file (`Fd2Sink`),
    whose lines become notes unless they are known noise, so they never reach the user. On CUDA
    libkineto's errors are let through (`KINETO_LOG_LEVEL` 3 unless the user set it) and kept
    in `kineto_errors`: they say why a trace holds no GPU activity. On the CPU every level is
    muted (a CUDA build logs a missing driver on each run).
    """

    def __init__(self, plan: WindowPlan, device_type: str, *, enabled: bool) -> None:
        self.plan = plan
        self.enabled = enabled
        self.notes: list[str] = []
        self.kineto_errors: list[str] = []
        self._prof: Any = None
        self._closed = False
        if not enabled:
            return
        import warnings

        # Read once, when libkineto first starts in this process (inside the sink's call).
        os.environ.setdefault("KINETO_LOG_LEVEL", kineto_log_level(device_type))

        import torch.profiler as tp

        activities = [tp.ProfilerActivity.CPU]
        if device_type == "cuda":
            activities.append(tp.ProfilerActivity.CUDA)
        self._sink = Fd2Sink()
        with warnings.catch_warnings():
            # warmup=0 is a legitimate choice here; torch warns (building the schedule) that it
            # may skew results.
            warnings.simplefilter("ignore", UserWarning)
            self._prof = tp.profile(
                activities=activities,
                schedule=plan.schedule(),
                experimental_config=profiler_options(device_type),
            )
            self._sink.call(self._prof.start)

    def step(self) -> None:
        if self._prof is not None:
            self._sink.call(self._prof.step)

    def close(self) -> None:
        """Stop recording (idempotent); later iterations run without the profiler."""
        if self._prof is not None and not self._closed:
            self._closed = True
            self._sink.call(self._prof.stop)
            self._drain()

    def export(self, path: Any) -> bool:
        """Write the Chrome trace to `path`; False (and a note) when torch cannot. A full disk
        is not a missing trace: that OSError propagates (the run fails, exit 3)."""
        if self._prof is None:
            return False
        self.close()
        try:
            self._sink.call(lambda: self._prof.export_chrome_trace(str(path)))
        except OSError as err:
            if err.errno in NO_SPACE:
                raise
            self.notes.append(f"no trace: torch could not export it ({err})")
            return False
        except (RuntimeError, ValueError) as err:
            self.notes.append(f"no trace: torch could not export it ({err})")
            return False
        finally:
            self._drain()
        return True

    def _drain(self) -> None:
        self.notes.extend(self._sink.drain())
        self.kineto_errors.extend(self._sink.kineto_errors)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_NOTES = 3
MAX_SINK_BYTES = 64 * 1024
MAX_LINE_CHARS = 200


def profiler_options(device_type: str) -> Any:
    """torch.profiler's `_ExperimentalConfig` for our window, with those of these options that
    this torch knows (older ones lack `trace_only`):
    `trace_only` (we only export the trace: stop() skips building Python objects for every
    event, 5-8 ms on a CPU inference window) and, without CUDA, `disable_external_correlation`
    (no GPU activity to link an op to: one call into Kineto less per op)."""
    from torch._C._profiler import _ExperimentalConfig

    wanted = {"trace_only": True, "disable_external_correlation": device_type != "cuda"}
    supported = _ExperimentalConfig.__init__.__doc__ or ""  # pybind's signature line
    known: dict[str, Any] = {name: on for name, on in wanted.items() if f"{name}:" in supported}
    return _ExperimentalConfig(**known)


def kineto_log_level(device_type: str) -> str:
    """libkineto's log level for a run on `device_type`: errors (3) on CUDA, nothing (5) else."""
    return "3" if device_type == "cuda" else "5"


class Fd2Sink:
    """A scratch file that file descriptor 2 points at during `call`; `drain` returns what
    landed there as notes, dropping libkineto's noise and anything with terminal controls
    (another thread's progress display, caught in the window), and closes the file; the
    messages of libkineto's errors in what it drained are then in `kineto_errors`."""

    def __init__(self) -> None:
        self._file: Any = None
        self.kineto_errors: list[str] = []

    def call(self, fn: Callable[[], Any]) -> Any:
        if sys.stderr is not None:  # Python's own pending text goes to the real stderr first
            sys.stderr.flush()
        try:
            saved = os.dup(2)
        except OSError:  # no fd 2 at all: nothing to protect
            return fn()
        if self._file is None:
            import tempfile

            self._file = tempfile.TemporaryFile()  # noqa: SIM115 - spans calls; drain() closes
        os.dup2(self._file.fileno(), 2)
        try:
            return fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)

    def drain(self) -> list[str]:
        self.kineto_errors = []
        if self._file is None:
            return []
        with self._file as sink:
            sink.seek(0)
            text = sink.read(MAX_SINK_BYTES).decode("utf-8", "replace")
        self._file = None
        # A CR belongs to its line; a line with terminal controls is a progress display's.
        lines = [line.strip() for line in text.split("\n") if "\x1b" not in line]
        errors = [e for e in map(kineto_error, lines) if e]
        self.kineto_errors = [_one_line(e) for e in errors[:MAX_NOTES]]
        kept = [line for line in lines if not is_noise(line)]
        return [f"profiler: {_one_line(line)}" for line in kept[:MAX_NOTES]]


def _one_line(text: str) -> str:
    """`text` cut to MAX_LINE_CHARS, control characters blanked: fit for one note line."""
    return _CONTROL.sub(" ", text[:MAX_LINE_CHARS])
