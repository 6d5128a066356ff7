"""An out-of-memory moment explained from the CUDA allocator's snapshot: the request that
failed, what was allocated and reserved, and the allocation sites holding the most.

The snapshot is `torch.cuda.memory._snapshot()`'s plain data (the file
https://pytorch.org/memory_viz opens): `segments`, each with its `blocks` ({size, state,
frames: [{filename, line, name}]}), and `device_traces` (per device, the allocator's recent
actions; an `oom` entry's `size` is the request that failed). A block's site is its innermost
frame outside torch's own files (the model code that asked); a block with no frames was
allocated before the history was recorded. Every field is read defensively: a file is input,
and one of another shape is an AnalysisError (exit 1), never a crash.

Pure: no I/O; stdlib and msgspec only (readers import it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import msgspec

from libreyolo.analysis.result_kind import ResultKind
from libreyolo.errors import AnalysisError

MB = 1e6
ALLOCATED = "active_allocated"
TORCH_FILES = ("/torch/", "\\torch\\")  # frames inside torch itself: not a site to change
NO_STACK = "(no stack: allocated before the history was recorded)"


class OomSite(msgspec.Struct, frozen=True):
    where: str  # "forward (yolo9.py:120)"
    mb: float
    num_blocks: int


class OomView(msgspec.Struct, frozen=True):
    """`libreyolo profile memory <snapshot>`: what held the device when it ran out."""

    result_kind: ClassVar[ResultKind] = ResultKind.OOM
    failed_request_mb: float | None  # None: the history recorded no `oom` entry
    allocated_mb: float
    reserved_mb: float
    num_segments: int
    sites: tuple[OomSite, ...]  # largest first, at most `top`
    num_sites: int  # all sites, shown or not


def oom_view(snapshot: object, *, origin: str, top: int = 10) -> OomView:
    """The snapshot's moment: AnalysisError when it is not a CUDA memory snapshot."""
    if not isinstance(snapshot, Mapping) or not isinstance(snapshot.get("segments"), list):
        raise AnalysisError(
            f"failed to analyse {origin}: not a CUDA memory snapshot (no segments list)",
            hint="pass the oom_snapshot.pickle a CUDA run left, or a torch.cuda.memory._snapshot()",
        )
    segments = [s for s in snapshot["segments"] if isinstance(s, Mapping)]
    held: dict[str, list[int]] = {}
    allocated = reserved = 0
    for segment in segments:
        reserved += _count(segment.get("total_size"))
        for block in _items(segment.get("blocks")):
            if block.get("state") != ALLOCATED:
                continue
            size = _count(block.get("size"))
            allocated += size
            site = held.setdefault(site_of(block.get("frames")), [0, 0])
            site[0] += size
            site[1] += 1
    ranked = sorted(held.items(), key=lambda item: (-item[1][0], item[0]))
    failed = _failed_request(snapshot.get("device_traces"))
    return OomView(
        failed_request_mb=None if failed is None else round(failed / MB, 1),
        allocated_mb=round(allocated / MB, 1),
        reserved_mb=round(reserved / MB, 1),
        num_segments=len(segments),
        sites=tuple(OomSite(where, round(b / MB, 1), n) for where, (b, n) in ranked[:top]),
        num_sites=len(ranked),
    )


def site_of(frames: object) -> str:
    """`name (file:line)` of the innermost frame outside torch; NO_STACK without frames."""
    stack = _items(frames)
    if not stack:
        return NO_STACK
    mine = [f for f in stack if not any(part in str(f.get("filename", "")) for part in TORCH_FILES)]
    frame = (mine or stack)[0]
    filename = str(frame.get("filename", "?")).replace("\\", "/").rsplit("/", 1)[-1]
    return f"{frame.get('name', '?')} ({filename}:{_count(frame.get('line'))})"


def _failed_request(traces: object) -> int | None:
    """The size of the last `oom` action any device's history recorded."""
    failed = None
    for device in traces if isinstance(traces, list) else ():
        for entry in _items(device):
            if entry.get("action") == "oom":
                failed = _count(entry.get("size"))
    return failed


def _items(value: object) -> Sequence[Mapping[str, object]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
