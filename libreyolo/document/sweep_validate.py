"""What a sweep record may hold: the type and range of every field a reader uses, checked when
`sweep.json` is read and when a point's row is built from its folder.

`libreyolo-sweep` writes the record from its point folders, so a batch of 10**30, an img/s of
1e308, a list where an object belongs or a status no sweep writes means a file was damaged or
edited. Read on, such values crash the sweep page's charts (an axis of zero width, the logarithm
of zero) or print nonsense. Instead `read_sweep_record` refuses the record (AnalysisError,
exit 1, one line naming the field, as `validate.py` does for a profile) and `point_entry` makes
the point `failed` (code `invalid`) with the field in its reason, so the sweep still reads.

Rules (any field may be absent but a point's `status`; null is "not recorded" where a scalar
belongs):
* `batch` 1..MAX_BATCH (or AUTO_BATCH, -1), `imgsz` 1..MAX_IMGSZ, `threads` 1..MAX_THREADS,
  `num_*` 0..MAX_COUNT: integers, never booleans;
* `amp`, `amp_effective`, `reused`, `metrics.memory_pressure`, `metrics.contended`: booleans;
* the headline metrics and `device_memory_mb`: numbers 0..MAX_METRIC (`cpu_wait_frac` 0..1),
  a positive one at least MIN_METRIC; timing seconds 0..MAX_METRIC;
* `status` one of STATUSES; names, codes, paths and overrides: strings of at most
  MAX_NAME_CHARS; reasons and verdicts: at most MAX_TEXT_CHARS; `overrides` a list of at most
  MAX_OVERRIDES strings;
* `points` an object of objects; `recommended` an object of imgsz -> the name of one of them.
Fields no reader uses are not checked (a newer writer may add some).

Must not: read files, print, or import anything beyond the standard library and errors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from libreyolo.errors import AnalysisError

Rule = Callable[[Any, str], str | None]  # (value, its path) -> the problem, None when fine

HINT = (
    "libreyolo-sweep never writes such a value: the file was damaged or edited; "
    "rebuild it from the point folders with: python -m libreyolo.sweep.report <sweep dir>"
)
# A point's status: `ok` (a profile; `reused` when a resumed sweep kept it), `failed`,
# `interrupted` (Ctrl-C or SIGTERM stopped it) or `missing` (planned, never started).
STATUSES = ("ok", "failed", "interrupted", "missing")
MAX_BATCH = 1 << 20  # a million images in one step: beyond any device's memory
AUTO_BATCH = -1  # a point's requested batch when the sweep auto-fits it (`--batch -1`)
MAX_IMGSZ = 1 << 16  # 65536 px a side: beyond any model's input
MAX_THREADS = 1 << 16
MAX_COUNT = 1 << 32  # points in a sweep
# Far below 2**53, so a chart padding a single value by 1 still gets an axis of some width.
MAX_METRIC = 1e15
# The writer rounds every headline metric to at most 3 decimals: a smaller positive value is
# none of its, and a chart's ticks (rounded to 10 decimals) would collapse to zero under it.
MIN_METRIC = 1e-6
MAX_PROFILE_INT = 2**64 - 1  # the largest integer a profile holds (`validate.py`)
MAX_NAME_CHARS = 4096  # PATH_MAX: point names are folder paths
MAX_TEXT_CHARS = 1 << 20  # what a status.json (MAX_SMALL_BYTES) can hold
MAX_OVERRIDES = 1024
_SHOWN_CHARS = 60  # a string in a message is cut to this many characters

_KINDS = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "an object",
}


def _kind(value: object) -> str:
    return "null" if value is None else _KINDS.get(type(value), type(value).__name__)


def quoted(text: str) -> str:
    """`text` as a Python literal (control characters escaped), cut to a readable length."""
    if len(text) > _SHOWN_CHARS:
        text = text[: _SHOWN_CHARS - 10] + "…" + text[-9:]
    return repr(text)


def shown(value: object) -> str:
    """A value as a message shows it: numbers compact, strings quoted and cut, containers by
    kind (a hostile file's value never makes the message long)."""
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, bool) or value is None:
        return _kind(value)
    if isinstance(value, int) and abs(value) >= 10**6:
        try:
            return f"{value:.3g}"
        except OverflowError:  # more digits than a float holds
            return "an integer beyond 1e+308"
    return repr(value) if isinstance(value, int | float) else _kind(value)


def first_problem(checks: Iterable[tuple[str, Any, Rule]]) -> str | None:
    """The first problem of (path, value, rule) checks, in order."""
    for path, value, rule in checks:
        problem = rule(value, path)
        if problem:
            return problem
    return None


def count(lo: int, hi: int, *, auto: int | None = None) -> Rule:
    """An integer lo..hi (not a boolean), `auto` (a sentinel such as batch -1), or null."""
    span = f"{lo}..{hi}" if auto is None else f"{lo}..{hi}, or {auto} for auto"

    def rule(value: Any, path: str) -> str | None:
        if value is None:
            return None
        if type(value) is not int:
            return f"{path} is {_kind(value)}, not an integer"
        if lo <= value <= hi or value == auto:
            return None
        return f"{path} is {shown(value)} (out of range {span})"

    return rule


def number(hi: float, *, tiny: bool = False) -> Rule:
    """A number 0..hi, a positive one at least MIN_METRIC unless `tiny` (measured seconds are
    not rounded), or null."""
    lowest, span = (0.0, f"0..{hi:g}") if tiny else (MIN_METRIC, f"0 or {MIN_METRIC:g}..{hi:g}")

    def rule(value: Any, path: str) -> str | None:
        if value is None:
            return None
        if type(value) not in (int, float):
            return f"{path} is {_kind(value)}, not a number"
        if value == 0 or lowest <= value <= hi:  # NaN fails both
            return None
        return f"{path} is {shown(value)} (out of range {span})"

    return rule


def flag(value: Any, path: str) -> str | None:
    """A boolean, or null."""
    return (
        None if value is None or type(value) is bool else f"{path} is {_kind(value)}, not a boolean"
    )


def text(limit: int, *, null: bool = True) -> Rule:
    """A string of at most `limit` characters (or null, when `null`)."""

    def rule(value: Any, path: str) -> str | None:
        if value is None and null:
            return None
        if not isinstance(value, str):
            return f"{path} is {_kind(value)}, not a string"
        if len(value) > limit:
            return f"{path} is a string of {len(value)} characters (at most {limit})"
        return None

    return rule


def choice(values: tuple[str, ...]) -> Rule:
    """One of `values`."""

    def rule(value: Any, path: str) -> str | None:
        if isinstance(value, str) and value in values:
            return None
        return f"{path} is {shown(value)}, not one of {', '.join(values)}"

    return rule


_OVERRIDE = text(MAX_NAME_CHARS, null=False)


def strings(value: Any, path: str) -> str | None:
    """A list of at most MAX_OVERRIDES strings (Hydra overrides)."""
    if not isinstance(value, list):
        return f"{path} is {_kind(value)}, not a list"
    if len(value) > MAX_OVERRIDES:
        return f"{path} holds {len(value)} items (at most {MAX_OVERRIDES})"
    return first_problem((f"{path}[{i}]", item, _OVERRIDE) for i, item in enumerate(value))


# The headline metrics a point's row copies from its profile, in the record's order.
METRIC_RULES: dict[str, Rule] = {
    "img_per_s": number(MAX_METRIC),
    "step_ms": number(MAX_METRIC),
    "latency_p50_ms": number(MAX_METRIC),
    "peak_vram_mb": number(MAX_METRIC),
    "memory_pressure": flag,
    "cpu_wait_frac": number(1.0),
    "contended": flag,
    "bound": text(MAX_NAME_CHARS),
}


def metrics(value: Any, path: str) -> str | None:
    """An object of headline metrics (others are not read, so not checked)."""
    if not isinstance(value, dict):
        return f"{path} is {_kind(value)}, not an object"
    return first_problem(
        (f"{path}.{key}", value[key], rule) for key, rule in METRIC_RULES.items() if key in value
    )


# Copied from a point's status.json into its row: where the time went.
TIMING_RULES: dict[str, Rule] = {
    "held_device": text(MAX_NAME_CHARS),
    "lease_wait_s": number(MAX_METRIC, tiny=True),
    "measure_s": number(MAX_METRIC, tiny=True),
    "window_s": number(MAX_METRIC, tiny=True),
    "point_s": number(MAX_METRIC, tiny=True),
}
POINT_RULES: dict[str, Rule] = {
    "status": choice(STATUSES),
    "reason": text(MAX_TEXT_CHARS),
    "code": text(MAX_NAME_CHARS),
    "overrides": strings,
    "batch": count(1, MAX_BATCH, auto=AUTO_BATCH),
    "imgsz": count(1, MAX_IMGSZ),
    "amp": flag,
    "threads": count(1, MAX_THREADS),
    "amp_effective": flag,
    "device_memory_mb": number(MAX_METRIC),
    "profile": text(MAX_NAME_CHARS),
    "metrics": metrics,
    "verdict": text(MAX_TEXT_CHARS),
    "reused": flag,
    **TIMING_RULES,
}
RECORD_RULES: dict[str, Rule] = {
    "sweep_dir": text(MAX_NAME_CHARS),
    "num_points": count(0, MAX_COUNT),
    "num_ok": count(0, MAX_COUNT),
    "num_reused": count(0, MAX_COUNT),
    "num_failed": count(0, MAX_COUNT),
    "num_interrupted": count(0, MAX_COUNT),
    "num_missing": count(0, MAX_COUNT),
    "chart": text(MAX_NAME_CHARS),
}
_NAME = text(MAX_NAME_CHARS, null=False)


def point_problem(row: Any, path: str) -> str | None:
    """The first problem of one point's row (None when there is none)."""
    if not isinstance(row, dict):
        return f"{path} is {_kind(row)}, not an object"
    if "status" not in row:
        return f"{path}.status is missing"
    return first_problem(
        (f"{path}.{key}", row[key], rule) for key, rule in POINT_RULES.items() if key in row
    )


def _recommended_problem(value: Any, points: dict[str, Any]) -> str | None:
    if not isinstance(value, dict):
        return f"recommended is {_kind(value)}, not an object"
    for imgsz, name in value.items():
        if len(imgsz) > MAX_NAME_CHARS:
            return f"recommended has a key of {len(imgsz)} characters (at most {MAX_NAME_CHARS})"
        where = f"recommended[{quoted(imgsz)}]"
        problem = _NAME(name, where)
        if problem:
            return problem
        if name not in points:
            return f"{where} is {quoted(name)}, not a point of this sweep"
    return None


def record_problem(data: dict[str, Any]) -> str | None:
    """The first problem of a sweep record (None when there is none)."""
    points = data.get("points")
    if not isinstance(points, dict):
        return f"points is {_kind(points)}, not an object"
    for name, row in points.items():
        if len(name) > MAX_NAME_CHARS:
            return f"points has a name of {len(name)} characters (at most {MAX_NAME_CHARS})"
        problem = point_problem(row, f"points[{quoted(name)}]")
        if problem:
            return problem
    checks = ((key, data[key], rule) for key, rule in RECORD_RULES.items() if key in data)
    problem = first_problem(checks)
    if problem is None and "recommended" in data:
        problem = _recommended_problem(data["recommended"], points)
    return problem


def check_record(data: dict[str, Any], *, origin: str) -> None:
    """AnalysisError (exit 1) naming the first field of the record at `origin` that no sweep
    writes."""
    problem = record_problem(data)
    if problem:
        raise AnalysisError(
            f"failed to read sweep {origin}: invalid sweep record: {problem}", hint=HINT
        )
