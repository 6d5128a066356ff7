"""A point child's log (`point.log`, its stderr): what to relay, and why it crashed.

libkineto and c10 write their own log lines to the same stderr; they are never a point's
reason and never relayed. A warning every point repeats (random weights: a paragraph) is relayed
once per sweep process, not once per point. Must not: read files or print (callers pass the log
text).
"""

from __future__ import annotations

from libreyolo.kineto.logs import is_noise

WARNING_PREFIX = "warning: "  # boundary.output's prefix of a warning line


def relayed(log: str, warned: set[str]) -> str:
    """The log without libkineto's and c10's own lines, nor a warning already in `warned` (what
    the sweep shows of a point); the warnings it keeps are added to `warned`."""
    kept = []
    for line in log.splitlines(True):
        if is_noise(line):
            continue
        if line.startswith(WARNING_PREFIX):
            if line.rstrip() in warned:
                continue
            warned.add(line.rstrip())
        kept.append(line)
    return "".join(kept)


def last_error(log: str) -> str:
    """A crashed child's reason from its log: the exception line of the last traceback, else
    the last line that is not libkineto's or c10's own noise; `no output` when there is none."""
    lines = [line.rstrip() for line in log.splitlines() if line.strip()]
    own = [line for line in lines if not is_noise(line)]
    starts = [i for i, line in enumerate(own) if line.startswith("Traceback (most recent call")]
    if starts:
        after = [line for line in own[starts[-1] + 1 :] if not line[0].isspace()]
        if after:
            return after[0]
    return own[-1] if own else "no output"
