"""The sweep table: one row per point sorted by img/s (points without a result last; a point a
resumed sweep kept shows `reused`), then the recommended point per imgsz and the counts, which
call a sweep "all ok" only when every planned point is (`2 of 4 points ok, 1 interrupted,
1 missing`). The sweep prints it at its end and
`libreyolo profile summary <sweep-dir>` prints it from `sweep.json`.

Plain lines; `render/style.py` colours them on a terminal. Pure: no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.analysis.sweep import Points, by_throughput, counts
from libreyolo.render.safe import safe_text, short_name

if TYPE_CHECKING:
    from libreyolo.document.sweep_model import SweepRecord, SweepRow

# Peak memory: the device's (VRAM, CUDA) and the measuring process's resident set (RSS).
# The table's name for its best point per imgsz once a batch search gave the answer.
HIGHEST = "highest img/s"
HEADER = ("point", "status", "img/s", "VRAM MB", "RSS MB", "thrash", "contended", "verdict")


def _fmt(value: float | bool | None, digits: int = 1) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{value:.{digits}f}"
    return "-"


def _row(name: str, entry: SweepRow) -> tuple[str, ...]:
    metrics = entry.metrics
    status: str = entry.status
    if status == "ok":
        verdict = entry.verdict or "-"
        status = "reused" if entry.reused is True else status
    else:
        verdict = f"{entry.code or 'failed'}: {entry.reason or ''}".strip()
    return (  # names, statuses and reasons come from the sweep's files: escaped
        short_name(name),
        short_name(status),
        _fmt(metrics.img_per_s),
        _fmt(metrics.peak_vram_mb),
        _fmt(metrics.peak_rss_mb),
        _fmt(metrics.memory_pressure),
        _fmt(metrics.contended),
        safe_text(verdict),
    )


def sweep_lines(record: SweepRecord, best: str = "recommended") -> list[str]:
    """The table lines of a sweep record (`sweep.json`); `best` names the trusted point with
    the highest img/s per imgsz (after a batch search's answer: `highest img/s`)."""
    points = record.points
    rows = [HEADER, *(_row(name, points[name]) for name in by_throughput(points))]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER) - 1)]
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
