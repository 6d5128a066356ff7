"""A training step's tensor memory by category: the `memory` reader, summary's line, metrics.

Role: read a profile's `tensor_memory` (one step tracked after the window,
`measure/tensor_memory.py`) into rows by category (largest first, with each one's share of the
peak), the blocks whose activations are alive at the peak, and the lever the largest category
points to. Pure: no I/O; stdlib and msgspec only (readers import it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import msgspec

from libreyolo.analysis import stats
from libreyolo.analysis.fragmentation import fragmentation_lever, fragmentation_pct
from libreyolo.analysis.result_kind import ResultKind
from libreyolo.document.mode import Mode
from libreyolo.document.model import (
    TENSOR_CATEGORIES,
    PeakPoint,
    Profile,
    Scalar,
    TensorMemory,
)
from libreyolo.errors import AnalysisError

MB = 1e6  # as peak_rss_mb and peak_vram_mb
# A tensor byte more at the peak is this many bytes more of peak RSS on the CPU: glibc keeps
# freed blocks and oneDNN's workspaces grow with the batch. Fitted to scripts/bench_memory.py
# (YOLOv9-t and YOLOX-s, 128 and 320 px: 1.21x to 1.43x; 1.0 under-predicted by 3-10 %), as
# measure/memory_budget.py's ALLOCATOR_SLACK was to inference. The CUDA allocator's peak
# allocated counts tensors themselves: 1.0 there.
RSS_PER_TENSOR_BYTE = 1.25

# What to change when a category is the largest share of the peak.
LEVERS = {
    "activations": "a smaller --batch or --imgsz; AMP on CUDA; activation checkpointing",
    "temporaries": "a smaller --batch or --imgsz (the backward's and the loss's temporaries)",
    "params": "a smaller model size (weights, their gradients, optimizer state and EMA follow)",
    "grads": "a smaller model size (one gradient a weight)",
    "optimizer": "another optimizer (SGD keeps one buffer a weight, Adam and AdamW two)",
    "ema": "a smaller model size (the EMA copy is one more set of weights)",
    "buffers": "a smaller model size",
    "inputs": "a smaller --batch or --imgsz",
}


class CategoryRow(msgspec.Struct, frozen=True):
    category: str
    mb: float
    share: float  # of the peak


class BlockRow(msgspec.Struct, frozen=True):
    block: str
    mb: float
    share: float  # of the activations at the peak


class PeakLine(msgspec.Struct, frozen=True):
    """One phase's highest tensor total as a line in the batch, through the two probes."""

    phase: str
    fixed_bytes: float
    per_image_bytes: float

    def at(self, batch: int) -> float:
        return self.fixed_bytes + self.per_image_bytes * batch


class Prediction(msgspec.Struct, frozen=True):
    """The peak the probes' lines give at the run's batch (beside the measured one), and,
    when asked, at another batch and the largest batch under a budget."""

    probe_batches: tuple[int, ...]
    predicted_mb: float
    error_pct: float  # (predicted - measured) / measured
    per_image_mb: float  # the steepest line's slope: what one more image costs at the peak
    process: str | None = None  # the process's measured peak the budget reads ("peak RSS")
    at_batch: int | None = None
    at_batch_mb: float | None = None  # the tensor peak there
    at_batch_process_mb: float | None = None  # the process's peak there
    budget_mb: float | None = None  # of the process's peak, else of the tensor peak
    largest_batch: int | None = None  # under budget_mb; 0: not even one image fits


def process_peak_of(metrics: Mapping[str, Scalar]) -> tuple[str, float] | None:
    """The process's measured peak over the window from a profile's metric map, (name, MB):
    the CUDA allocator's peak allocated where there is one, else the peak RSS; None when
    neither was measured."""
    for key, name in (("peak_vram_mb", "peak VRAM"), ("peak_rss_mb", "peak RSS")):
        value = stats.as_number(metrics.get(key))
        if value is not None:
            return name, value
    return None


def process_lines(tracked: TensorMemory, metrics: Mapping[str, Scalar]) -> tuple[PeakLine, ...]:
    """The process's peak as a line per phase: its measured peak, plus the tensors' predicted
    growth from the run's batch, scaled on the CPU by RSS_PER_TENSOR_BYTE (what is not tensors,
    the interpreter and torch's libraries, stays). Empty without probes or a measured peak."""
    peak = process_peak_of(metrics)
    if peak is None:
        return ()
    scale = RSS_PER_TENSOR_BYTE if peak[0] == "peak RSS" else 1.0
    base = peak[1] * MB - scale * tracked.peak_bytes
    return tuple(
        PeakLine(line.phase, base + scale * line.fixed_bytes, scale * line.per_image_bytes)
        for line in peak_lines(tracked)
    )


def predict_process_mb(profile: Profile, batch: int) -> float | None:
    """The process's peak at `batch` (`process_lines`); None where there are no lines."""
    tracked = profile.tensor_memory
    lines = () if tracked is None else process_lines(tracked, profile.metrics)
    predicted = predict_peak(lines, batch)
    return None if predicted is None else round(predicted / MB, 1)


class VramUse(msgspec.Struct, frozen=True):
    """The CUDA allocator over the window, as the `memory` reader shows it (MB = 10**6 B)."""

    peak_allocated_mb: float | None
    peak_reserved_mb: float | None
    fragmentation_pct: float | None  # the peak of split blocks not in use, of the reserved peak
    largest_free_block_mb: float | None  # as the window ended
    alloc_retries: int | None
    lever: str  # `fragmentation_lever`: expandable_segments where fragmented, else ""


def vram_use(profile: Profile) -> VramUse | None:
    """The window's allocator figures; None without a CUDA allocator record."""
    memory = profile.device_memory
    if memory is None:
        return None
    allocated, reserved = memory.peak_allocated_bytes, memory.peak_reserved_bytes
    inactive, free = memory.peak_inactive_split_bytes, memory.largest_free_block_bytes
    pct = fragmentation_pct(inactive, reserved)
    return VramUse(
        peak_allocated_mb=_mb(allocated),
        peak_reserved_mb=_mb(reserved),
        fragmentation_pct=pct,
        largest_free_block_mb=_mb(free),
        alloc_retries=memory.num_alloc_retries,
        lever=fragmentation_lever(pct),
    )


def _mb(value: int | None) -> float | None:
    return None if value is None else round(value / 1e6, 1)


class TensorMemoryView(msgspec.Struct, frozen=True):
    """`libreyolo profile memory`: the peak's split by category and by block."""

    result_kind: ClassVar[ResultKind] = ResultKind.MEMORY
    peak_mb: float
    phase_at_peak: str
    batch: int
    imgsz: int
    categories: tuple[CategoryRow, ...]  # largest first; every category, zeros included
    blocks: tuple[BlockRow, ...]  # largest first, at most `top`
    largest: str
    lever: str
    track_ms: float
    peak_rss_mb: float | None  # the window's own process peak, for scale
    peak_rss_own: bool  # shared library pages left out of it (False: an older profile's VmHWM)
    vram: VramUse | None  # the CUDA allocator's window (None on the CPU)
    prediction: Prediction | None  # None: no probes (batch 1, older files)


def tensor_memory_of(profile: Profile, origin: str) -> TensorMemory:
    """The profile's tracked step; AnalysisError (exit 1) when it has none, with why."""
    tracked = profile.tensor_memory
    if tracked is not None:
        return tracked
    if profile.kind == Mode.INFER:
        why, hint = "an inference profile has no training step", "measure one with `profile run`"
    else:
        why = (
            "this training profile has no tracked step: a compiled step, the trainer probe, or "
            "a file from before tensor memory was recorded (its notes say which)"
        )
        hint = "measure again with `profile run ... --exec eager`"
    raise AnalysisError(
        f"failed to analyse {origin}: no tensor memory by category ({why})", hint=hint
    )


def category_rows(tracked: TensorMemory) -> tuple[CategoryRow, ...]:
    peak = tracked.peak_bytes
    rows = [
        CategoryRow(name, round(size / MB, 1), size / peak if peak else 0.0)
        for name, size in tracked.categories.items()
    ]
    return tuple(sorted(rows, key=lambda row: -row.mb))


def peak_lines(tracked: TensorMemory) -> tuple[PeakLine, ...]:
    """A line per phase through the probes' peaks in it; empty without two distinct probes."""
    return lines_through(tracked.probes)


def lines_through(points: Sequence[PeakPoint]) -> tuple[PeakLine, ...]:
    """A line per phase through the smallest and the largest batch's peaks in it; empty
    without two distinct batches."""
    probes = sorted(points, key=lambda point: point.batch)
    if len(probes) < 2 or probes[0].batch == probes[-1].batch:
        return ()
    low, high = probes[0], probes[-1]
    lines = []
    for phase, high_bytes in high.phase_peak_bytes.items():
        low_bytes = low.phase_peak_bytes.get(phase)
        if low_bytes is None:
            continue
        slope = (high_bytes - low_bytes) / (high.batch - low.batch)
        lines.append(PeakLine(phase, low_bytes - slope * low.batch, slope))
    return tuple(lines)


def predict_peak(lines: tuple[PeakLine, ...], batch: int) -> float | None:
    """The predicted tensor peak at `batch`: the highest of the phases' lines."""
    return max((line.at(batch) for line in lines), default=None)


def largest_batch(lines: tuple[PeakLine, ...], budget_bytes: float) -> int | None:
    """The largest batch whose predicted peak stays within `budget_bytes` (0 when even one
    image does not fit); None without lines, or when no line grows with the batch."""
    growing = [line for line in lines if line.per_image_bytes > 0]
    if not growing:
        return None
    if any(line.fixed_bytes > budget_bytes for line in lines):
        return 0
    return max(
        min(int((budget_bytes - line.fixed_bytes) // line.per_image_bytes) for line in growing), 0
    )


def _prediction(
    profile: Profile, tracked: TensorMemory, at_batch: int | None, budget_mb: float | None
) -> Prediction | None:
    lines = peak_lines(tracked)
    predicted = predict_peak(lines, tracked.batch)
    if predicted is None or not tracked.peak_bytes:
        return None
    at = None if at_batch is None else predict_peak(lines, at_batch)
    process = process_peak_of(profile.metrics)
    largest = None
    if budget_mb is not None:  # of the process's peak where it was measured, else of tensors
        budgeted = process_lines(tracked, profile.metrics) if process is not None else lines
        largest = largest_batch(budgeted, budget_mb * MB)
    return Prediction(
        probe_batches=tuple(sorted({point.batch for point in tracked.probes})),
        predicted_mb=round(predicted / MB, 1),
        error_pct=round((predicted - tracked.peak_bytes) / tracked.peak_bytes * 100, 1) or 0.0,
        per_image_mb=round(max(line.per_image_bytes for line in lines) / MB, 2),
        process=None if process is None else process[0],
        at_batch=at_batch,
        at_batch_mb=None if at is None else round(at / MB, 1),
        at_batch_process_mb=None if at_batch is None else predict_process_mb(profile, at_batch),
        budget_mb=budget_mb,
        largest_batch=largest,
    )


def memory_view(
    profile: Profile,
    *,
    origin: str,
    top: int = 10,
    at_batch: int | None = None,
    budget_mb: float | None = None,
) -> TensorMemoryView:
    tracked = tensor_memory_of(profile, origin)
    rows = category_rows(tracked)
    activations = tracked.categories.get("activations", 0)
    blocks = tuple(
        BlockRow(b.name, round(b.bytes / MB, 1), b.bytes / activations if activations else 0.0)
        for b in tracked.top_blocks[:top]
    )
    largest = rows[0].category if rows else "none"
    host = profile.host_memory
    peak_rss = host.peak_rss_bytes if host else None
    return TensorMemoryView(
        peak_mb=round(tracked.peak_bytes / MB, 1),
        phase_at_peak=tracked.phase_at_peak,
        batch=tracked.batch,
        imgsz=tracked.imgsz,
        categories=rows,
        blocks=blocks,
        largest=largest,
        lever=LEVERS.get(largest, ""),
        track_ms=tracked.track_ms,
        peak_rss_mb=None if peak_rss is None else round(peak_rss / MB, 1),
        peak_rss_own=host is not None and host.library_rss_bytes is not None,
        vram=vram_use(profile),
        prediction=_prediction(profile, tracked, at_batch, budget_mb),
    )


def tensor_memory_metrics(profile: Profile) -> dict[str, Scalar]:
    """`tensor_peak_mb`, the largest category, each category's MB at the peak and the
    prediction's; none of them where no step was tracked."""
    tracked = profile.tensor_memory
    if tracked is None:
        return {}
    rows = category_rows(tracked)
    metrics: dict[str, Scalar] = {
        "tensor_peak_mb": round(tracked.peak_bytes / MB, 1),
        "tensor_largest": rows[0].category if rows else None,
    }
    by_name = {row.category: row.mb for row in rows}
    metrics |= {f"tensor_{name}_mb": by_name.get(name, 0.0) for name in TENSOR_CATEGORIES}
    prediction = _prediction(profile, tracked, None, None)
    metrics["tensor_predicted_mb"] = None if prediction is None else prediction.predicted_mb
    metrics["tensor_prediction_error_pct"] = None if prediction is None else prediction.error_pct
    return metrics
