"""The sweep table: one row per point sorted by img/s (points without a result last; a point a
resumed sweep kept shows `reused`) with its MFU and, where some point has it, its energy per
image; its exec mode once the sweep ran more than one (or any but eager), and the seconds
torch.compile or the ONNX export took before the warmup where some point has them; then the
recommended point per imgsz and the counts, which call a sweep "all ok" only when every
planned point is (`2 of 4 points ok, 1 interrupted, 1 missing`). The sweep prints it at its end and
`libreyolo profile summary <sweep-dir>` prints it from `sweep.json`.

Plain lines; `render/style.py` colours them on a terminal. Pure: no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.analysis.sweep import Points, by_throughput, counts, has_energy, shows_exec
from libreyolo.document.health_names import SUSPECT
from libreyolo.render.safe import safe_text, short_name
from libreyolo.render.units import significant_decimals

if TYPE_CHECKING:
    from libreyolo.document.sweep_model import SweepRecord, SweepRow

# The table's name for its best point per imgsz once a batch search gave the answer.
HIGHEST = "highest img/s"
# MFU: the model FLOP rate's share of the device's peak. J/img (the GPU's energy per image)
# only when some point has it: NVML on CUDA measures it, a CPU never does. Peak memory: the
# device's (VRAM, CUDA) and the measuring process's resident set (RSS).
HEADER = ("point", "status", "img/s", "MFU", "VRAM MB", "RSS MB", "thrash", "contended", "verdict")
ENERGY_COLUMN = "J/img"
ENERGY_AT = HEADER.index("MFU") + 1
J_DIGITS = 3  # significant digits of J/img: it spans mJ (a big GPU batch) to J
EXEC_AT = HEADER.index("status") + 1
EXEC_COLUMN = "exec"
COMPILE_COLUMN = "compile s"
EXPORT_COLUMN = "export s"
# A training point's tracked tensor peak, and its probes' prediction's error against it: the
# prediction's truth, on every point.
TENSOR_COLUMNS = ("tensor MB", "pred")


def _fmt(value: float | bool | None, digits: int = 1) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{value:.{digits}f}"
    return "-"


def fmt_mfu(value: float | None) -> str:
    """A fraction as a whole percent (`33%`); `<1%` for any MFU under one percent, which a
    rounded `0%` would misread as nothing done."""
    if value is None:
        return "-"
    if 0 < value < 0.01:
        return "<1%"
    return f"{value * 100:.0f}%"


def fmt_joules(value: float | None) -> str:
    """J/img to J_DIGITS significant digits in plain notation (`0.0234`, `1.20`)."""
    if value is None:
        return "-"
    return f"{value:.{significant_decimals(value, J_DIGITS)}f}"


def _exec_cells(entry: SweepRow, shown: tuple[str, ...]) -> tuple[str, ...]:
    """The row's cells of the exec columns `shown` (a subset of `_exec_columns`)."""
    cells = {
        EXEC_COLUMN: short_name(entry.exec or "-"),
        COMPILE_COLUMN: _fmt(entry.compile_s),
        EXPORT_COLUMN: _fmt(entry.export_s),
    }
    return tuple(cells[c] for c in shown)


def _exec_columns(points: Points) -> tuple[str, ...]:
    """The exec columns the table shows: none for a sweep of eager points only."""
    if not shows_exec(points):
        return ()
    rows = points.values()
    return (
        EXEC_COLUMN,
        *((COMPILE_COLUMN,) if any(e.compile_s is not None for e in rows) else ()),
        *((EXPORT_COLUMN,) if any(e.export_s is not None for e in rows) else ()),
    )


def _tensor_cells(entry: SweepRow) -> tuple[str, str]:
    """The tracked step's tensor peak and the probes' prediction's error against it."""
    peak, predicted = entry.metrics.tensor_peak_mb, entry.metrics.tensor_predicted_mb
    if peak is None:
        return "-", "-"
    error = "-" if predicted is None or not peak else f"{(predicted - peak) / peak * 100:+.1f}%"
    return f"{peak:.1f}", error


def has_tensors(points: Points) -> bool:
    """Some point tracked its step's tensors (a training point): the truth columns show."""
    return any(entry.metrics.tensor_peak_mb is not None for entry in points.values())


def _row(
    name: str,
    entry: SweepRow,
    energy: bool,
    shown: tuple[str, ...] = (),
    tensors: bool = False,
) -> tuple[str, ...]:
    metrics = entry.metrics
    status: str = entry.status
    if status == "ok":
        verdict = entry.verdict or "-"
        status = "reused" if entry.reused is True else status
    else:
        verdict = f"{entry.code or 'failed'}: {entry.reason or ''}".strip()
    joules = (fmt_joules(metrics.energy_j_per_img),) if energy else ()
    return (  # names, statuses and reasons come from the sweep's files: escaped
        short_name(name),
        short_name(status),
        *_exec_cells(entry, shown),
        _fmt(metrics.img_per_s),
        fmt_mfu(metrics.mfu),
        *joules,
        _fmt(metrics.peak_vram_mb),
        _fmt(metrics.peak_rss_mb),
        *(_tensor_cells(entry) if tensors else ()),
        _fmt(metrics.memory_pressure),
        _fmt(metrics.contended),
        safe_text(verdict),
    )


def header(energy: bool, shown: tuple[str, ...] = (), tensors: bool = False) -> tuple[str, ...]:
    """The table's column names, with `J/img` after MFU when `energy`, the exec columns
    `shown` after the status and, with `tensors`, the tracked step's tensor peak and the
    prediction's error after RSS."""
    names = HEADER if not energy else (*HEADER[:ENERGY_AT], ENERGY_COLUMN, *HEADER[ENERGY_AT:])
    if tensors:
        at = names.index("RSS MB") + 1
        names = (*names[:at], *TENSOR_COLUMNS, *names[at:])
    return (*names[:EXEC_AT], *shown, *names[EXEC_AT:])


def sweep_lines(record: SweepRecord, best: str = "recommended") -> list[str]:
    """The table lines of a sweep record (`sweep.json`); `best` names the trusted point with
    the highest img/s per imgsz (after a batch search's answer: `highest img/s`)."""
    points = record.points
    energy, tensors = has_energy(points), has_tensors(points)
    shown = _exec_columns(points)
    names = header(energy, shown, tensors)
    ordered = by_throughput(points)
    rows = [names, *(_row(name, points[name], energy, shown, tensors) for name in ordered)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(names) - 1)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1]
        for r in rows
    ]
    lines += [
        f"{best} for imgsz {short_name(imgsz)}: {short_name(name)}"
        for imgsz, name in record.recommended.items()
    ]
    if not record.recommended:
        lines.append(f"{best}: none (no point finished without failure, thrash or contention)")
    contended = sum(e.metrics.contended is True for e in points.values())
    if contended:
        noun = "point was" if contended == 1 else "points were"
        lines.append(
            f"contended: {contended} {noun} measured on a busy host and never recommended; "
            "measure again on a quiet machine"
        )
    suspect = sum(e.metrics.bound == SUSPECT for e in points.values())
    if suspect:
        noun = "point" if suspect == 1 else "points"
        lines.append(
            f"suspect: {suspect} {noun} whose trace failed the health check, never "
            "recommended; `summary` of a point's profile names the check"
        )
    disagree = sum(e.metrics.agrees is False for e in points.values())
    if disagree:
        noun = "point" if disagree == 1 else "points"
        lines.append(
            f"disagrees: {disagree} {noun} whose mode disagrees with eager fp32, never recommended"
        )
    lines.append(count_line(points))
    return lines


def count_line(points: Points) -> str:
    """`all 4 points ok`, `1 of 4 points failed`, `2 of 4 points ok, 1 interrupted, 1 missing`;
    `, 2 reused` when a resumed sweep kept ok points."""
    tally, total = counts(points), len(points)
    noun = "point" if total == 1 else "points"
    reused = f", {tally['reused']} reused" if tally["reused"] else ""
    short = [f"{tally[s]} {s}" for s in ("failed", "interrupted", "missing") if tally[s]]
    if not short:
        return f"all {total} {noun} ok{reused}"
    if tally["failed"] == total - tally["ok"]:  # failures only: the 1.x wording
        return f"{tally['failed']} of {total} {noun} failed{reused}"
    return f"{tally['ok']} of {total} {noun} ok, {', '.join(short)}{reused}"


def sweep_table(record: SweepRecord) -> str:
    """The table as one text block (no trailing newline)."""
    return "\n".join(sweep_lines(record))
