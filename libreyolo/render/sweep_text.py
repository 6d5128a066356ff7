"""The sweep table: one row per point sorted by img/s (failed points last), then the
recommended point per imgsz and the failed count. The sweep prints it at its end and
`libreyolo profile summary <sweep-dir>` prints it from `sweep.json`.

Plain lines; `render/style.py` colours them on a terminal. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from libreyolo.analysis.sweep import by_throughput
from libreyolo.render.safe import safe_text, short_name

HEADER = ("point", "status", "img/s", "peak MB", "thrash", "verdict")


def _fmt(value: Any, digits: int = 1) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{value:.{digits}f}"
    return "-"


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _row(name: str, entry: dict[str, Any]) -> tuple[str, ...]:
    metrics = _object(entry.get("metrics"))
    if entry.get("status") == "ok":
        verdict = str(entry.get("verdict") or "-")
    else:
        verdict = f"{entry.get('code') or 'failed'}: {entry.get('reason') or ''}".strip()
    return (  # names, statuses and reasons come from the sweep's files: escaped
        short_name(name),
        short_name(entry.get("status", "failed")),
        _fmt(metrics.get("img_per_s")),
        _fmt(metrics.get("peak_vram_mb")),
        _fmt(metrics.get("memory_pressure")),
        safe_text(verdict),
    )


def sweep_lines(data: dict[str, Any]) -> list[str]:
    """The table lines of a sweep record (`sweep.json`'s object)."""
    # A sweep.json read back is checked to hold a points map, not what is inside: a row that
    # is not an object shows as a failed point rather than crashing the table.
    points = {name: _object(entry) for name, entry in data["points"].items()}
    rows = [HEADER, *(_row(name, points[name]) for name in by_throughput(points))]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER) - 1)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1]
        for r in rows
    ]
    recommended = _object(data.get("recommended"))
    lines += [
        f"recommended for imgsz {short_name(imgsz)}: {short_name(name)}"
        for imgsz, name in recommended.items()
    ]
    if not recommended:
        lines.append("recommended: none (no point finished without failure or thrash)")
    failed, total = data.get("num_failed", 0), len(points)
    noun = "point" if total == 1 else "points"
    lines.append(f"{failed} of {total} {noun} failed" if failed else f"all {total} {noun} ok")
    return lines


def sweep_table(data: dict[str, Any]) -> str:
    """The table as one text block (no trailing newline)."""
    return "\n".join(sweep_lines(data))
