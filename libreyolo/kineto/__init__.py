"""Chrome trace reduction: the only package that knows Kineto event names. No torch/numpy.

`analyse_trace` imports the analyser on first use: readers import `kineto.classify` for its
category names, and that must not pull the whole decoder into their start-up.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from libreyolo.document.limits import MAX_INPUT_BYTES

if TYPE_CHECKING:
    from libreyolo.document.model import TraceAnalysis

__all__ = ["analyse_trace"]


def analyse_trace(
    path: str | os.PathLike[str],
    *,
    workers: int | None = None,
    max_input_bytes: int = MAX_INPUT_BYTES,
) -> TraceAnalysis:
    """Reduce the Chrome trace at `path` (`.json` or `.json.gz`) to a `TraceAnalysis`, reading
    at most `max_input_bytes` of it (decompressed)."""
    from libreyolo.kineto.reduce import analyse_trace as reduce_file

    return reduce_file(path, workers=workers, max_input_bytes=max_input_bytes)
