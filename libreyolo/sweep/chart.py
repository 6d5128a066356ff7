"""`sweep.png`: throughput (img/s) against batch, one line per (imgsz, amp, threads), failed
points left out. The x axis is log2 when every batch is a power of two or the batches span
two doublings or more (`analysis.sweep.log2_axis`). The series and their
labels come from `libreyolo.analysis.sweep` (the sweep page draws the same ones). A tune
search's points measured on its short ranking window only are hollow markers, named in the
legend: their img/s is a short window's, not the full one the other points were measured on.

matplotlib is optional (`pip install 'libreyolo[chart]'`) and imported only here, inside
`write_chart`, with the Agg backend: without it the chart is skipped with one line on stderr
and the sweep goes on. The PNG carries `Software: libreyolo-sweep` (`is_our_chart`), so a sweep
replaces only a chart it drew, and lands atomically.

Must not: fail a sweep because the chart cannot be drawn, or write but through `Output`.
"""

from __future__ import annotations

import io
from collections.abc import Collection
from pathlib import Path
from typing import Any

from libreyolo.analysis.sweep import (
    Points,
    chart_series,
    log2_axis,
    series_label,
    series_names,
)
from libreyolo.boundary.output import Output
from libreyolo.document.files import write_atomic
from libreyolo.document.limits import open_regular
from libreyolo.errors import ProfileError

SOFTWARE = "libreyolo-sweep"  # the PNG's Software text chunk: this tool drew it
MAX_CHART_BYTES = 64 << 20  # a chart we drew is ~50 kB; only its head is read
_MARK = b"tEXtSoftware\x00" + SOFTWARE.encode()
_PNG = b"\x89PNG\r\n\x1a\n"
INSTALL_HINT = "pip install 'libreyolo[chart]'"
SKIPPED = f"chart skipped: matplotlib is not installed ({INSTALL_HINT} gets it)"
RANKED_LABEL = "ranked on a short window only"
HOLLOW: dict[str, Any] = {"linestyle": "none", "marker": "o", "markerfacecolor": "white"}


def write_chart(
    points: Points, path: Path, *, out: Output | None = None, ranked: Collection[str] = ()
) -> Path | None:
    """Draw the chart of `points` at `path`, the `ranked` ones (a tune search's ranking window
    only: `analysis.sweep.ranked_only`) hollow; None when skipped (no matplotlib, nothing ok;
    the first with one line on `out`, default the real streams)."""
    if not chart_series(points):
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot as plt
    except ImportError:
        (out or Output.plain()).say(SKIPPED)
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    try:
        draw(ax, points, ranked)
        fig.tight_layout()
        png = io.BytesIO()
        fig.savefig(png, format="png", metadata={"Software": SOFTWARE})
    finally:
        plt.close(fig)
    write_atomic(path, png.getvalue())
    return path


def draw(ax: Any, points: Points, ranked: Collection[str] = ()) -> None:
    """The chart on matplotlib axes `ax`: a line per series, hollow markers on `ranked`."""
    series = chart_series(points)
    names = series_names(points)  # the same points, in the same order
    hollow = False
    for key, values in series.items():
        batches, ips = zip(*values, strict=True)
        (line,) = ax.plot(batches, ips, marker="o", label=series_label(points, key))
        short = [v for n, v in zip(names[key], values, strict=True) if n in ranked]
        if short:
            hollow = True
            at, rate = zip(*short, strict=True)
            ax.plot(at, rate, **HOLLOW, markeredgecolor=line.get_color(), zorder=3)
    if hollow:  # a legend entry for the hollow markers, drawn nowhere
        ax.plot([], [], **HOLLOW, markeredgecolor="grey", label=RANKED_LABEL)
    batches_seen = {b for values in series.values() for b, _ in values}
    if log2_axis(batches_seen):
        ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(batches_seen), [str(b) for b in sorted(batches_seen)])
    ax.set_xlabel("batch")
    ax.set_ylabel("img/s")
    ax.set_title("throughput by batch")
    ax.grid(True, alpha=0.3)
    ax.legend()


def is_our_chart(path: Path) -> bool:
    """Whether `path` is a PNG this module drew (its text chunks precede the image data)."""
    try:
        with open_regular(str(path), MAX_CHART_BYTES) as handle:  # never a FIFO's open
            head = handle.read(4096)
    except (OSError, ProfileError):
        return False
    return head.startswith(_PNG) and _MARK in head
