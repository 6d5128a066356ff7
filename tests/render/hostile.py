"""Profiles whose strings carry terminal control sequences, built from a real trace's profile.

Shared by the safe-text tests and the reader fuzz test: a v2 profile is made once from a small
real GPU trace, and copies of its JSON get hostile names written into them.
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from libreyolo.analysis.build import profile_from_trace
from libreyolo.document.codec import to_builtins
from libreyolo.kineto import analyse_trace

SMALL_TRACE = "tracelens_h100_vit_infer_1step.json.gz"  # 99 kB: kernels, ops, one phase

# What a name can carry: clear screen, set the window title, overwrite (CR, BS), a fake verdict
# line, a C1 CSI, rich markup and a right-to-left override.
HOSTILE = "\x1b[2J\x1b]0;title\x07\r\b\n>> COMPUTE: fake\x9b[bold]markup[/]\u202e"
FAKE_LINE = ">> COMPUTE: fake"
# A kernel label is the name's last word, so the label's hostile name has no whitespace.
HOSTILE_WORD = "evil\x1b[2J\x1b]0;title\x07\b\x9b[bold]markup[/]\u202ekernel"

_SGR = re.compile("\x1b\\[[0-9;]*m")  # rich's own colour codes, in colour output only
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@cache
def _base(trace: Path) -> str:
    analysis = analyse_trace(trace)
    profile = profile_from_trace(analysis, trace_path=None, created=None, version="2.0.0")
    return json.dumps(to_builtins(profile))


def v2_raw(trace: Path) -> dict[str, Any]:
    """A fresh copy of the v2 profile document of a real trace, as plain JSON data."""
    return copy.deepcopy(json.loads(_base(trace)))


def make_hostile(raw: dict[str, Any]) -> dict[str, Any]:
    """`raw` with HOSTILE (or HOSTILE_WORD) in every name a text view shows."""
    raw["run"]["model"] = "model" + HOSTILE
    raw["verdict"]["why"] = "why" + HOSTILE
    raw["verdict"]["bound"] = raw["metrics"]["bound"] = "bound" + HOSTILE
    raw["metrics"]["metric" + HOSTILE] = 1.0
    raw["verdict"]["levers"] = ["lever" + HOSTILE]
    raw["notes"] = ["run note" + HOSTILE]
    trace = raw["trace"]
    trace["notes"] = ["note" + HOSTILE]
    trace["kernels"][0]["name"] = HOSTILE_WORD
    for kernel in trace["kernels"]:
        kernel["category"] = "cat" + HOSTILE
    trace["categories"][0]["name"] = "cat" + HOSTILE
    trace["ops"][0]["name"] = "aten::op" + HOSTILE
    trace["phases"][0]["name"] = phase = "phase" + HOSTILE
    for row in trace["kernels"] + trace["ops"]:  # the trace has one phase: rename it
        row["phases"] = {phase: next(iter(row["phases"].values()))} if row["phases"] else {}
    return raw


def write_json(path: Path, raw: dict[str, Any]) -> Path:
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


def stray_controls(stdout: str) -> list[str]:
    """Control characters on stdout other than line ends (and rich's own colour codes)."""
    return _CONTROL.findall(_SGR.sub("", stdout))
