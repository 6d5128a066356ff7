"""Whether two compared profiles ran the same way: execution mode, channels-last, compile mode.

Role: `compare` warns of each difference beside the batch/imgsz/AMP ones, since a change of
execution mode is a different program, not a regression. A file that predates the
`execution` record is unknown and is never called different.

`disagreement` says why no faster call is made over a side whose detections disagree with
eager fp32 (`execution.agreement` below the floor).

Must not: change a delta or its significance arithmetic.
"""

from __future__ import annotations

import json

from libreyolo.document.model import Agreement, Execution, Profile


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


def disagreement(before: Profile, after: Profile, floor: float) -> str | None:
    """Why no faster/slower call is made: a side whose detections disagree with eager fp32
    below `floor` (`Agreement.score`) measured another model, however fast; None when both
    agree or were not checked."""
    sides = []
    for side, profile in (("before", before), ("after", after)):
        agreement = profile.execution.agreement if profile.execution is not None else None
        if agreement is not None and agreement.disagrees(floor):
            sides.append(f"the {side} run disagrees with {agreement.reference}: {how(agreement)}")
    if not sides:
        return None
    a, b = before.metrics.get("img_per_s"), after.metrics.get("img_per_s")
    faster = isinstance(a, int | float) and isinstance(b, int | float) and b > a
    return (
        f"{'faster' if faster else 'not faster'}, but {'; '.join(sides)} (below "
        f"--min-agreement {floor}): no significance call"
    )


def how(agreement: Agreement) -> str:
    """`recall 0.62, precision 0.7, outputs 12% apart` (the parts known)."""
    parts = [f"recall {agreement.recall}", f"precision {agreement.precision}"]
    if agreement.max_rel_diff is not None:
        parts.append(f"outputs {agreement.max_rel_diff:.2%} apart")
    return ", ".join(parts)
