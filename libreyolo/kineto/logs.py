"""libkineto's and c10's own log lines, the one place that knows their shapes.

libkineto writes `USDT:2026-12-01 10:15:10 8988:8988 ...] profiler_start`, `STAGE:...` and
`INFO:...` lines, c10 `[W1201 10:15:10.123 CPUAllocator.cpp:249] ...` warnings, straight to
file descriptor 2. They mean nothing to a user and are never a point's reason for failing.
Must not: read files or print.
"""

from __future__ import annotations

import re

NOISE = re.compile(
    r"^\s*$"
    r"|^(USDT|STAGE|INFO):"  # libkineto's probes and progress, dated or not
    r"|^(WARNING|ERROR|VERBOSE):\d{4}-\d\d-\d\d "  # its dated log levels (ours are never dated)
    r"|^\[[WIEF]\d{4} |^\[[WIEF] \S+:\d+\]"  # c10's glog-style warnings
)


def is_noise(line: str) -> bool:
    """Whether `line` is libkineto's or c10's own, not the program's."""
    return NOISE.match(line) is not None
