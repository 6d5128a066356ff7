"""An out-of-memory snapshot as text: the `memory` reader's view of one, and the one line a
CUDA run that ran out of memory ends with. Pure: lines from `analysis.oom_sites` results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.render.safe import safe_text

if TYPE_CHECKING:
    from libreyolo.analysis.oom_sites import OomView

LINE_SITES = 3  # sites named in the one-line failure


def _size(mb: float) -> str:
    return f"{mb / 1000:.2f} GB" if mb >= 1000 else f"{mb:.1f} MB"


def moment(view: OomView) -> str:
    """ "a 1.20 GB request failed with 10.31 GB allocated of 10.50 GB reserved"."""
    held = f"{_size(view.allocated_mb)} allocated of {_size(view.reserved_mb)} reserved"
    if view.failed_request_mb is None:
        return f"{held} (the history holds no failed request)"
    return f"a {_size(view.failed_request_mb)} request failed with {held}"


def oom_line(view: OomView) -> str:
    """The failure line's account: the moment and the sites holding the most."""
    sites = ", ".join(f"{safe_text(s.where)} {_size(s.mb)}" for s in view.sites[:LINE_SITES])
    more = ", …" if view.num_sites > LINE_SITES else ""
    return f"{moment(view)}; held most by {sites}{more}" if sites else moment(view)


def oom_lines(view: OomView) -> list[str]:
    lines = [
        f"oom      {moment(view)} ({view.num_segments} segments)",
        "allocated at (innermost frame outside torch), largest first:",
    ]
    for site in view.sites:
        lines.append(f"  {_size(site.mb):>9}  x{site.num_blocks:<5} {safe_text(site.where)}")
    if view.num_sites > len(view.sites):
        lines.append(f"  ({view.num_sites - len(view.sites)} more sites: raise --top)")
    return lines
