"""A training step's tensor memory as text: the `memory` reader's table and summary's line.

Pure: lines from `analysis.tensor_memory` results; no I/O, no rich.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.render.safe import short_name
from libreyolo.render.units import bar, fmt_pct_change

if TYPE_CHECKING:
    from libreyolo.analysis.delta import Delta
    from libreyolo.analysis.tensor_compare import TensorDeltas
    from libreyolo.analysis.tensor_memory import (
        CategoryRow,
        Prediction,
        TensorMemoryView,
        VramUse,
    )

# Categories below this share of the peak are left out of summary's one line.
LINE_MIN_SHARE = 0.02


def _size(mb: float) -> str:
    return f"{mb / 1000:.2f} GB" if mb >= 1000 else f"{mb:.1f} MB"


def split_line(peak_mb: float, rows: tuple[CategoryRow, ...]) -> str:
    """ "peak 3.10 GB = activations 62% · temporaries 18% · …" (shares of 2% and more)."""
    shown = [row for row in rows if row.share >= LINE_MIN_SHARE]
    parts = [f"{row.category} {row.share * 100:.0f}%" for row in shown]
    rest = " · …" if any(row.share < LINE_MIN_SHARE and row.mb > 0 for row in rows) else ""
    return f"peak {_size(peak_mb)} = {' · '.join(parts)}{rest}"


def memory_lines(view: TensorMemoryView) -> list[str]:
    lines = [
        f"tensors  {split_line(view.peak_mb, view.categories)}",
        f"         one step at batch {view.batch}, imgsz {view.imgsz}, tracked after the window "
        f"({view.track_ms / 1000:.1f} s); peak in the {view.phase_at_peak}",
    ]
    if view.peak_rss_mb is not None:
        what = (
            "the process's own: interpreter, torch and free blocks too; shared library pages not"
            if view.peak_rss_own
            else "the whole process, libraries and free blocks too"
        )
        lines.append(f"         the window's peak RSS: {_size(view.peak_rss_mb)} ({what})")
    lines.append("category        MB  share")
    for row in view.categories:
        share = f"{row.share * 100:5.1f}%"
        lines.append(f"  {row.category:<12} {row.mb:8.1f} {share}  {bar(row.share)}")
    if view.blocks:
        lines.append("activations alive at the peak, by block:")
        for block in view.blocks:
            lines.append(
                f"  {short_name(block.block):<18} {block.mb:8.1f} MB {block.share * 100:5.1f}%"
            )
    lines += prediction_lines(view.prediction, view.batch)
    lines += vram_lines(view.vram)
    if view.lever:
        lines.append(f"lever    {view.largest}, the largest: {view.lever}")
    if view.vram is not None and view.vram.lever:
        lines.append(f"lever    fragmentation: {view.vram.lever}")
    return lines


def vram_lines(vram: VramUse | None) -> list[str]:
    """The CUDA allocator over the window: what the tensors took, what it held, how split."""
    if vram is None:
        return []
    allocated = "?" if vram.peak_allocated_mb is None else _size(vram.peak_allocated_mb)
    reserved = "?" if vram.peak_reserved_mb is None else _size(vram.peak_reserved_mb)
    parts = [f"VRAM     peak allocated {allocated} of {reserved} reserved"]
    if vram.fragmentation_pct is not None:
        parts.append(f"fragmentation {vram.fragmentation_pct:.0f}% (split blocks not in use)")
    if vram.largest_free_block_mb is not None:
        parts.append(f"largest free block {_size(vram.largest_free_block_mb)}")
    if vram.alloc_retries is not None:
        parts.append(f"{vram.alloc_retries} allocation retries")
    return [" · ".join(parts)]


def prediction_lines(prediction: Prediction | None, batch: int) -> list[str]:
    """The probes' prediction at the run's batch beside the measured peak; at another batch
    and under a budget when asked."""
    if prediction is None:
        return []
    probes = " and ".join(str(probe) for probe in prediction.probe_batches)
    extra = [f"{prediction.per_image_mb:.1f} MB an image"]
    if prediction.at_batch is not None and prediction.at_batch_mb is not None:
        there = f"batch {prediction.at_batch}: {_size(prediction.at_batch_mb)} of tensors"
        if prediction.at_batch_process_mb is not None:
            there += f", {prediction.process} {_size(prediction.at_batch_process_mb)}"
        extra.append(there)
    if prediction.budget_mb is not None:
        fits = prediction.largest_batch
        answer = "none grows with the batch" if fits is None else f"batch {fits}"
        of = prediction.process or "tensor peak"
        extra.append(f"largest under {_size(prediction.budget_mb)} of {of}: {answer}")
    return [
        f"predict  {_size(prediction.predicted_mb)} at batch {batch}, "
        f"{prediction.error_pct:+.1f}% off the measured peak (from steps at batch {probes})",
        *(f"         {line}" for line in extra),
    ]


def _mb_side(value: object) -> str:
    return f"{value:.1f}" if isinstance(value, int | float) else "?"


def _mb_delta(label: str, delta: Delta) -> str:
    return (
        f"{label:<15}{_mb_side(delta.before)} -> {_mb_side(delta.after)} MB"
        f"{fmt_pct_change(delta.change)}"
    )


def compare_tensor_lines(deltas: TensorDeltas | None) -> list[str]:
    """compare's tensor peak, then each category either side holds, before and after."""
    if deltas is None:
        return []
    lines = [_mb_delta("tensor peak", deltas.peak_mb)]
    lines += [_mb_delta(f"  {name}", delta) for name, delta in deltas.categories]
    return lines
