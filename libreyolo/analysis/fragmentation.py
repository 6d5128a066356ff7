"""The CUDA caching allocator's fragmentation: when it is high enough to name a lever.

Pure, and light: summary's text imports it, so it reads the metric map and imports nothing of
the document model at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from libreyolo.document.model import Scalar


# Split cached blocks not in use at this share of the reserved peak and above: the allocator
# holds memory it cannot hand to larger requests, the case `expandable_segments` addresses.
FRAGMENTED_PCT = 20.0
FRAGMENTATION_LEVER = (
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow in place instead of "
    "being split)"
)


def fragmentation_pct(inactive_bytes: int | None, reserved_bytes: int | None) -> float | None:
    """The peak of split blocks not in use as a percent of the reserved peak (r1); None
    where either was not recorded."""
    if inactive_bytes is None or not reserved_bytes:
        return None
    return round(100 * inactive_bytes / reserved_bytes, 1)


def fragmentation_lever(pct: float | None) -> str:
    """FRAGMENTATION_LEVER at FRAGMENTED_PCT and above, else ""."""
    return FRAGMENTATION_LEVER if pct is not None and pct >= FRAGMENTED_PCT else ""


def fragmentation_line(metrics: Mapping[str, Scalar]) -> str | None:
    """ "VRAM fragmentation 31% of the reserved peak (…); largest free block 12.0 MB" with the
    lever, where the share reaches FRAGMENTED_PCT; None below it or where not recorded."""
    pct, free = metrics.get("vram_fragmentation_pct"), metrics.get("largest_free_block_mb")
    if not isinstance(pct, int | float) or isinstance(pct, bool) or not fragmentation_lever(pct):
        return None
    reserved = metrics.get("peak_vram_reserved_mb")
    of = f" of the {reserved:.0f} MB reserved peak" if isinstance(reserved, float) else ""
    largest = f"; largest free block {free:.1f} MB" if isinstance(free, float) else ""
    return (
        f"VRAM fragmentation {pct:.0f}%{of} (split cached blocks not in use){largest}: "
        f"{fragmentation_lever(pct)}"
    )
