"""libkineto's and c10's own log lines, the one place that knows their shapes.

libkineto writes `USDT:2026-12-01 10:15:10 8988:8988 ...] profiler_start`, `STAGE:...` and
`INFO:...` lines, c10 `[W1201 10:15:10.123 CPUAllocator.cpp:249] ...` warnings, straight to
file descriptor 2. They mean nothing to a user and are never a point's reason for failing,
with one exception: on a CUDA run, libkineto's `ERROR:` lines (CUPTI cannot be initialised,
insufficient privileges) are why a trace holds no GPU activity; `kineto_error` reads them.
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


KINETO_ERROR = re.compile(r"^ERROR:\d{4}-\d\d-\d\d [^\]]*\]\s*(?P<message>.+)$")
# On a CPU-only machine with a CUDA build libkineto reports the missing driver on every run:
# no reason for anything.
HARMLESS_ERRORS = ("gpuGetDeviceCount failed",)


def kineto_error(line: str) -> str | None:
    """The message of one of libkineto's dated `ERROR:` lines; None for any other line and for
    errors that explain nothing (a CPU-only machine's missing driver)."""
    match = KINETO_ERROR.match(line.strip())
    if match is None:
        return None
    message = match.group("message").strip()
    return None if any(text in message for text in HARMLESS_ERRORS) else message
