"""Whether two compared profiles ran the same way: execution mode, channels-last, compile mode.

Role: `compare` warns of each difference beside the batch/imgsz/AMP ones, since a change of
execution mode is a different program, not a regression. A file that predates the
`execution` record is unknown and is never called different.

Must not: change a delta or its significance arithmetic.
"""

from __future__ import annotations

import json

from libreyolo.document.model import Execution, Profile


def _settings(execution: Execution) -> dict[str, object]:
    compiled = execution.compiled
    return {
        "exec": execution.name,
        "channels-last": execution.channels_last,
        "compile mode": None if compiled is None else compiled.mode,
    }


def exec_warnings(before: Profile, after: Profile) -> tuple[str, ...]:
    """One `the profiles differ in ...` line per execution setting the two ran differently."""
    if before.execution is None or after.execution is None:
        return ()
    a, b = _settings(before.execution), _settings(after.execution)
    if a["exec"] != b["exec"]:  # the compile mode differs with the mode itself: said once
        a.pop("compile mode"), b.pop("compile mode")
    return tuple(
        f"the profiles differ in {name}: {json.dumps(a[name])} vs {json.dumps(b[name])}"
        for name in a
        if a[name] != b[name]
    )
