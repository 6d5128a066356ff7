"""What a sweep's files may hold: the rules their structs declare (`sweep_model.py`), checked
when `sweep.json` is read and when a point's row is built from its folder.

`libreyolo-sweep` writes the record from its point folders, so a batch of 10**30, an img/s of
1e308, a list where an object belongs or a status no sweep writes means a file was damaged or
edited. Read on, such values crash the sweep page's charts (an axis of zero width, the logarithm
of zero) or print nonsense. Instead `read_sweep_record` refuses the record (AnalysisError,
exit 1, one line naming the field, as `validate.py` does for a profile) and `point_entry` makes
the point `failed` (code `invalid`) with the field in its reason, so the sweep still reads.

Rules (any field may be absent but a point's `status`; null is "not recorded" where a scalar
belongs), as `sweep_model.py` declares them:
* `batch` 1..MAX_BATCH (or AUTO_BATCH, -1), `imgsz` 1..MAX_IMGSZ, `threads` 1..MAX_THREADS,
  `num_*` 0..MAX_COUNT: integers, never booleans;
* `amp`, `amp_effective`, `reused`, `metrics.memory_pressure`, `metrics.contended`: booleans;
* the headline metrics and `device_memory_mb`: numbers 0..MAX_METRIC (`cpu_wait_frac` 0..1),
  a positive one at least MIN_METRIC; timing seconds 0..MAX_METRIC;
* `status` one of STATUSES; names, codes, paths and overrides: strings of at most
  MAX_NAME_CHARS; reasons and verdicts: at most MAX_TEXT_CHARS; `overrides` a list of at most
  MAX_OVERRIDES strings;
* `points` an object of objects; `recommended` an object of imgsz -> the name of one of them.
Fields no struct names are not checked (a newer writer may add some).

`tune.json` (`tune_model.py`) is checked the same way by `read_tune_record`, which refuses the
whole file: there is no sweep to read on without it. Beyond its fields' rules, a series'
recommended `batch` must be one its path measured, and each `recommended[i].point` a point of
some series' path (the page highlights that point).

Must not: read files, print, or import anything beyond the standard library and errors.
"""

from __future__ import annotations

from libreyolo.document.json_value import JsonObject, JsonValue
from libreyolo.document.rules import (
    Fields,
    Rule,
    field_problem,
    field_rules,
    first_problem,
    kind_of,
    quoted,
    shown,
)
from libreyolo.document.sweep_model import (
    MAX_NAME_CHARS,
    MAX_TEXT_CHARS,
    STATUSES,
    HeadlineMetrics,
    PointStatus,
    SweepRecord,
    SweepRow,
)
from libreyolo.document.tune_model import TuneRecord
from libreyolo.errors import AnalysisError

__all__ = [
    "HINT",
    "MAX_NAME_CHARS",
    "MAX_TEXT_CHARS",
    "METRIC_RULES",
    "POINT_RULES",
    "STATUSES",
    "STATUS_RULES",
    "TUNE_HINT",
    "check_record",
    "first_problem",
    "point_problem",
    "record_problem",
    "shown",
    "tune_problem",
]

HINT = (
    "libreyolo-sweep never writes such a value: the file was damaged or edited; "
    "rebuild it from the point folders with: python -m libreyolo.sweep.report <sweep dir>"
)
TUNE_HINT = (
    "libreyolo-sweep never writes such a value: the file was damaged or edited; run the same "
    "sweep again to rewrite it (its measured points are reused)"
)
METRIC_RULES: dict[str, Rule] = field_rules(HeadlineMetrics)  # in the record's order
POINT_RULES: dict[str, Rule] = field_rules(SweepRow)
STATUS_RULES: dict[str, Rule] = field_rules(PointStatus)
_ROW = Fields(SweepRow)


def point_problem(row: JsonValue, path: str) -> str | None:
    """The first problem of one point's row (None when there is none)."""
    return _ROW(row, path)


def _recommended_problem(data: JsonObject) -> str | None:
    """A recommended name that is no point of this sweep (the names are checked already)."""
    recommended, points = data.get("recommended"), data.get("points")
    if not isinstance(recommended, dict) or not isinstance(points, dict):
        return None
    for imgsz, name in recommended.items():
        if name not in points:
            return f"recommended[{quoted(imgsz)}] is {shown(name)}, not a point of this sweep"
    return None


def record_problem(data: JsonObject) -> str | None:
    """The first problem of a sweep record (None when there is none): its rows first, then its
    own fields, then whether each recommended point is one of its rows."""
    points = data.get("points")
    if not isinstance(points, dict):
        return f"points is {kind_of(points)}, not an object"
    return field_problem(data, SweepRecord, str) or _recommended_problem(data)


def check_record(data: JsonObject, *, origin: str) -> None:
    """AnalysisError (exit 1) naming the first field of the record at `origin` that no sweep
    writes."""
    problem = record_problem(data)
    if problem:
        raise AnalysisError(
            f"failed to read sweep {origin}: invalid sweep record: {problem}", hint=HINT
        )


def _path_problem(series: JsonObject, where: str) -> str | None:
    """A series' recommended batch that its path never measured (the fields are checked)."""
    batch, path = series.get("batch"), series.get("path", [])
    assert isinstance(path, list)
    measured = {step.get("batch") for step in path if isinstance(step, dict)}
    if batch is not None and batch not in measured:
        return f"{where}.batch is {shown(batch)}, not a batch of its path"
    return None


def tune_problem(data: JsonObject) -> str | None:
    """The first problem of a tune record (None when there is none): its fields' rules, then
    each series' batch against its path, then each recommended point against the paths."""
    problem = field_problem(data, TuneRecord, str)
    if problem:
        return problem
    series = data.get("series", [])
    assert isinstance(series, list)
    points: set[JsonValue] = set()
    for i, one in enumerate(series):
        assert isinstance(one, dict)
        problem = _path_problem(one, f"series[{i}]")
        if problem:
            return problem
        path = one.get("path", [])
        assert isinstance(path, list)
        points |= {step.get("point") for step in path if isinstance(step, dict)}
    recommended = data.get("recommended", [])
    assert isinstance(recommended, list)
    for i, rec in enumerate(recommended):
        assert isinstance(rec, dict)
        if rec.get("point") not in points:
            return (
                f"recommended[{i}].point is {shown(rec.get('point'))}, not a point of any "
                "series' path"
            )
    return None
