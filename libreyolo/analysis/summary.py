"""The high-level diagnosis `summary` prints. Pure.

Headline numbers come from the stored metric map (unsynced samples: the honest step time,
throughput and utilisation); the inference stage split comes from the synced samples and is
composition only. The noise note reads the raw unsynced samples.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from libreyolo.analysis import contention, stats
from libreyolo.analysis.compute_view import ComputeView, compute_view
from libreyolo.analysis.kernels import KernelRow, top_kernels
from libreyolo.analysis.metrics import per_step_divisor, unsynced_walls
from libreyolo.analysis.opclass import op_category_ms
from libreyolo.analysis.ops import OpRow, top_ops
from libreyolo.analysis.result_kind import ResultKind
from libreyolo.analysis.run_view import (
    MemoryView,
    RunHeader,
    TrialRow,
    TrialSpread,
    memory_view,
    run_header,
    trial_rows,
    trial_spread,
)
from libreyolo.analysis.tensor_memory import TensorMemoryView
from libreyolo.analysis.tensor_memory import memory_view as tensor_view
from libreyolo.document.mode import Mode
from libreyolo.document.model import Execution, Profile, Scalar, TraceHealth, Verdict
from libreyolo.document.phases import FORWARD, POSTPROCESS, PREPROCESS
from libreyolo.document.world import World

TOP_KERNELS = 8
TOP_OPS = 5
NOISY_IQR_SHARE = 0.10  # IQR/median above this: the run was noisy (torch.utils.benchmark's 10 %)
VERY_NOISY_IQR_SHARE = 0.25  # above this: single-run numbers are too noisy to read much into
P90_MIN_SAMPLES = 64  # fewer samples make p90 weak (MLPerf early-stopping floors)
P99_MIN_SAMPLES = 100  # the floor for a trustworthy p99
OVERHEAD_NOTE_PCT = 5.0  # above this, say the headline times carry the profiler's own cost
HISTOGRAM_BINS = 24  # the latency histogram's equal-width bins, min to max


class Bin(msgspec.Struct, frozen=True):
    lo_ms: float
    hi_ms: float
    count: int


class CategoryShare(msgspec.Struct, frozen=True):
    name: str
    share: float  # of all categorised GPU time (kernels + memcpy)
    ms_per_step: float


class Latency(msgspec.Struct, frozen=True):
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    mean_ms: float | None
    num_samples: int
    weak: tuple[str, ...]  # percentiles with too few samples to trust
    histogram: tuple[Bin, ...] = ()  # the measured latencies (empty for 1.6.0 files)


class Summary(msgspec.Struct, frozen=True):
    result_kind: ClassVar[ResultKind] = ResultKind.SUMMARY
    mode: Mode
    model: str | None
    family: str | None  # the model family ("yolo9"); None when the file cannot tell
    config: dict[str, object]
    metrics: dict[str, Scalar]
    verdict: Verdict
    has_gpu: bool
    latency: Latency | None
    stages_ms: dict[str, float | None] | None
    categories: tuple[CategoryShare, ...]
    top_kernels: tuple[KernelRow, ...]
    # CPU-only profiles: where the CPU's op self time goes (empty with a GPU, or for 1.6.0
    # files, whose inclusive op times count nested ops several times).
    op_categories: tuple[CategoryShare, ...]
    top_ops: tuple[OpRow, ...]
    num_trials: int
    # The trials had a process each (True), shared one (False), or it is not recorded (None).
    isolated_trials: bool | None
    # The trace's health checks; None without a trace, or in files that predate them.
    trace_health: TraceHealth | None
    # What the reading found (profiler overhead, noise) and what the run noted about itself
    # (`Profile.notes`); apart from them, the trace analyser's caveats about the trace.
    notes: tuple[str, ...]
    trace_notes: tuple[str, ...]
    # Host contention: None when measured (the numbers are in `metrics`), else the line that
    # says why it cannot be judged; the steps that waited most for a CPU.
    contention_unknown: str | None
    hardest_steps: tuple[contention.StepWait, ...]
    run: RunHeader
    trials: tuple[TrialRow, ...]
    trial_spread: tuple[TrialSpread, ...]
    memory: MemoryView | None
    tensors: TensorMemoryView | None  # a training step's tensors by category, where tracked
    compute: ComputeView  # FLOPs, achieved FLOP/s, peaks, MFU, energy (None parts: unknown)
    execution: Execution | None  # how the model ran; None in files that predate the record
    world: World | None = None  # a multi-process run's ranks (its world profile only)


# libreyolo 1.6.0 recorded no family; its model names carry it (LibreYOLO9t, YOLOv9-t, ...).
_NAMED_FAMILIES = (
    ("libreyolo9", "yolo9"),
    ("yolov9", "yolo9"),  # 1.6.0's training profiles: "YOLOv9-t"
    ("libreyolox", "yolox"),
    ("yolox", "yolox"),
)


def model_family(profile: Profile) -> str | None:
    """The profile's `run.family`, else the family its 1.6.0 model name implies, else None."""
    if profile.run.family:
        return profile.run.family
    name = (profile.run.model or profile.run.weights or "").rsplit("/", 1)[-1].lower()
    return next((fam for prefix, fam in _NAMED_FAMILIES if name.startswith(prefix)), None)


def _latency(profile: Profile) -> Latency | None:
    if profile.kind != Mode.INFER:
        return None
    samples = profile.samples.latency_ms
    m = profile.metrics
    stored = (profile.legacy_v1 or {}).get("latency")
    legacy = stored if isinstance(stored, dict) else {}  # legacy_v1 is 1.6.0's data, untyped
    n = len(samples) if samples else max(int(stats.as_number(legacy.get("n")) or 0), 0)
    if n == 0:
        return None  # a bare trace has no latency samples: say nothing rather than "?"
    weak = tuple(
        name for name, floor in (("p90", P90_MIN_SAMPLES), ("p99", P99_MIN_SAMPLES)) if n < floor
    )
    mean = m.get("latency_mean_ms", legacy.get("mean_ms"))
    return Latency(
        stats.as_number(m.get("latency_p50_ms")),
        stats.as_number(m.get("latency_p90_ms")),
        stats.as_number(m.get("latency_p99_ms")),
        stats.as_number(mean),
        n,
        weak,
        histogram(samples),
    )


def histogram(values: list[float], num_bins: int = HISTOGRAM_BINS) -> tuple[Bin, ...]:
    """Equal-width bins from the smallest to the largest value (one bin when all are equal);
    the last bin holds its upper edge."""
    if not values:
        return ()
    lo, hi = min(values), max(values)
    if hi <= lo:
        return (Bin(lo, hi, len(values)),)
    width = (hi - lo) / num_bins
    counts = [0] * num_bins
    for value in values:
        counts[min(int((value - lo) / width), num_bins - 1)] += 1
    return tuple(Bin(lo + i * width, lo + (i + 1) * width, c) for i, c in enumerate(counts))


def _stages(profile: Profile) -> dict[str, float | None] | None:
    m = profile.metrics
    if profile.kind != Mode.INFER or m.get("forward_ms") is None:
        return None
    return {
        PREPROCESS: stats.as_number(m.get("preprocess_ms")),
        FORWARD: stats.as_number(m.get("forward_ms")),
        POSTPROCESS: stats.as_number(m.get("nms_ms")),
    }


def _categories(profile: Profile) -> tuple[CategoryShare, ...]:
    trace = profile.trace
    if trace is None:
        return ()
    n = per_step_divisor(trace)
    total = sum(c.total_ms for c in trace.categories) or 1.0
    ordered = sorted(trace.categories, key=lambda c: (-c.total_ms, c.name))
    return tuple(
        CategoryShare(c.name, c.total_ms / total, c.total_ms / n) for c in ordered if c.total_ms > 0
    )


def _op_mix(profile: Profile) -> tuple[tuple[CategoryShare, ...], tuple[OpRow, ...]]:
    trace = profile.trace
    if trace is None or trace.has_gpu or not trace.ops:
        return (), ()
    if any(op.self_ms is None for op in trace.ops):
        return (), ()
    n = per_step_divisor(trace)
    totals = op_category_ms(trace.ops)
    total = sum(totals.values()) or 1.0
    ordered = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    shares = tuple(CategoryShare(name, ms / total, ms / n) for name, ms in ordered if ms > 0)
    return shares, top_ops(profile, top=TOP_OPS).rows


def _noise_notes(profile: Profile) -> tuple[str, ...]:
    share = stats.iqr_share(unsynced_walls(profile))
    if share is None or share <= NOISY_IQR_SHARE:
        return ()
    if share > VERY_NOISY_IQR_SHARE:
        return (f"very noisy run: IQR is {share:.0%} of the median; single-run numbers say little",)
    return (f"noisy run: IQR is {share:.0%} of the median step",)


def _overhead_notes(profile: Profile) -> tuple[str, ...]:
    pct = stats.as_number(profile.metrics.get("profiler_overhead_pct"))
    if pct is None or pct <= OVERHEAD_NOTE_PCT:
        return ()
    n = profile.window.num_bare
    return (
        f"profiler overhead: +{pct:.1f}% (traced iterations vs {n} without the profiler, same "
        "run); the step time and img/s above include it",
    )


def summarize(profile: Profile) -> Summary:
    """Everything `summary` shows, derived from one profile."""
    verdict = profile.verdict or Verdict(bound=str(profile.metrics.get("bound")), why="")
    trials = trial_rows(profile)
    op_categories, ops = _op_mix(profile)
    notes = _overhead_notes(profile) + _noise_notes(profile) + tuple(profile.notes)
    return Summary(
        mode=profile.kind,
        model=profile.run.model or profile.run.weights,
        family=model_family(profile),
        config=dict(profile.run.config),
        metrics=dict(profile.metrics),
        verdict=verdict,
        has_gpu=profile.trace is not None and profile.trace.has_gpu,
        latency=_latency(profile),
        stages_ms=_stages(profile),
        categories=_categories(profile),
        top_kernels=top_kernels(profile, top=TOP_KERNELS).rows,
        op_categories=op_categories,
        top_ops=ops,
        num_trials=len(profile.trials),
        isolated_trials=profile.run.isolated_trials if profile.trials else None,
        trace_health=profile.trace.health if profile.trace is not None else None,
        notes=notes,
        trace_notes=tuple(profile.trace.notes if profile.trace else ()),
        contention_unknown=contention.state(profile),
        hardest_steps=_hardest(profile),
        run=run_header(profile),
        trials=trials,
        trial_spread=trial_spread(trials),
        memory=memory_view(profile),
        world=profile.world,
        tensors=None if profile.tensor_memory is None else tensor_view(profile, origin=""),
        compute=compute_view(profile),
        execution=profile.execution,
    )


def _hardest(profile: Profile) -> tuple[contention.StepWait, ...]:
    """The steps hit hardest, named when at least one of them waited at the contended share
    (a window can average under it while a few steps were starved)."""
    rows = contention.hardest_hit(profile)
    worst = rows[0].cpu_wait_frac if rows else 0.0
    return rows if worst >= contention.CPU_WAIT_FRAC_CONTENDED else ()
