"""Two sweeps compared point by point: points matched by what was swept, each matched pair of ok
points compared like two profiles, the regression gate (when asked for) applied to every one.

A point is identified by the values of the keys swept in either sweep: a key whose value differs
between the points of one sweep (the axes batch, imgsz, amp and threads, read from the config
or the overrides, and any other override: `model=yolo9t,yolox_n` makes `model` one). Settings
the same across a sweep do not take part, so two sweeps that differ in one of them still match
point by point (and each comparison warns of the difference). A point
missing from one side, failed there, or whose profile cannot be read is not compared, and under
a gate that is a failure: a gate passes only when every point of both sweeps was compared and
none regressed, so a change that breaks points, a grid that moved, or a sweep that never ran
never passes by accident. Pure: the caller reads the rows and the points' profiles.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from libreyolo.analysis.compare import Comparison, compare
from libreyolo.analysis.result_kind import ResultKind
from libreyolo.document.json_value import JsonScalar
from libreyolo.errors import UsageError

if TYPE_CHECKING:
    from libreyolo.analysis.gate import Gate
    from libreyolo.document.model import Profile
    from libreyolo.document.sweep_model import SweepRow

AXES = ("batch", "imgsz", "amp", "threads")
Rows = Mapping[str, "SweepRow"]  # a sweep record's `points`: name -> row
Settings = dict[str, JsonScalar]  # what a point measured: key -> value
Identity = tuple[str | None, ...]  # per key: the value's repr, None where it is unknown


@dataclass(frozen=True, slots=True)
class SweepSide:
    """One sweep as the comparison reads it: its rows, the profiles of its ok points (read from
    inside its folder) and why an ok point's profile could not be read."""

    rows: Rows
    profiles: dict[str, Profile] = field(default_factory=dict)
    lost: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PointDelta:
    point: str  # the before sweep's point name (the after's when only it has the point)
    axes: Settings
    comparison: Comparison | None
    not_compared: str | None  # why there is no comparison: "only in after", "before failed"


@dataclass(frozen=True, slots=True)
class SweepComparison:
    result_kind: ClassVar[ResultKind] = ResultKind.SWEEP_COMPARE
    points: tuple[PointDelta, ...]
    threshold_pct: float | None  # --fail-on-regression, None without a gate
    swept: tuple[str, ...] = ()  # the keys besides AXES whose values told the points apart

    @property
    def failed_gates(self) -> tuple[tuple[str | None, Gate], ...]:
        """(point, gate) of every compared point whose gate failed."""
        return tuple(
            (p.point, p.comparison.gate)
            for p in self.points
            if p.comparison is not None and p.comparison.gate and p.comparison.gate.failed
        )

    @property
    def uncompared(self) -> tuple[PointDelta, ...]:
        """The points of either sweep that could not be compared."""
        return tuple(p for p in self.points if p.comparison is None)

    @property
    def num_compared(self) -> int:
        return len(self.points) - len(self.uncompared)

    @property
    def gate_failed(self) -> bool:
        """Under a gate: a point regressed, a point could not be compared, or none was."""
        if self.threshold_pct is None:
            return False
        return bool(self.failed_gates or self.uncompared) or self.num_compared == 0


def _overrides(row: SweepRow) -> dict[str, str]:
    """A row's overrides as key -> value text (`+key=` and `~key=` read as `key`)."""
    found: dict[str, str] = {}
    for text in row.overrides:
        if "=" in text:
            key, value = text.split("=", 1)
            found[key.strip().lstrip("+~")] = value.strip()
    return found


def _parsed(text: str) -> JsonScalar:
    """An override value as the config would hold it: int, bool, null, else the text."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "none"):
        return None
    try:
        return int(text)
    except ValueError:
        return text


def _settings(row: SweepRow) -> Settings:
    """What a row says its point measured: its overrides' values, and its config's AXES (a
    planned point that never ran has only the overrides)."""
    found = {key: _parsed(value) for key, value in _overrides(row).items()}
    axes: Settings = {
        "batch": row.batch,
        "imgsz": row.imgsz,
        "amp": row.amp,
        "threads": row.threads,
    }
    found |= {axis: value for axis, value in axes.items() if value is not None}
    return found


def point_keys(*sides: Rows) -> tuple[str, ...]:
    """The keys that identify a point: AXES, then every other key whose known value differs
    between the points of one sweep, by name."""
    keys: set[str] = set()
    for rows in sides:
        settings = [_settings(row) for row in rows.values()]
        for key in set().union(*settings) if settings else set():
            if len({repr(s[key]) for s in settings if s.get(key) is not None}) > 1:
                keys.add(key)
    return AXES + tuple(sorted(keys - set(AXES)))


def _identity(row: SweepRow, keys: tuple[str, ...]) -> Identity:
    """The row's value of each key (`repr`), None where it cannot be known: a planned point
    that never ran has no config, only the overrides of what its grid swept."""
    settings = _settings(row)
    known = row.status != "missing"
    return tuple(repr(settings.get(key)) if key in settings or known else None for key in keys)


def _agrees(a: Identity, b: Identity) -> bool:
    return all(x == y for x, y in zip(a, b, strict=True) if x is not None and y is not None)


def _axes(row: SweepRow, keys: tuple[str, ...]) -> Settings:
    settings = _settings(row)
    return {key: settings.get(key) for key in keys}


def _unique(rows: Rows, keys: tuple[str, ...]) -> dict[str, Identity]:
    """name -> identity; UsageError for two points of one sweep with the same settings."""
    seen: dict[Identity, str] = {}
    for name, row in rows.items():
        identity = _identity(row, keys)
        twin = seen.setdefault(identity, name) if None not in identity else name
        if twin != name:
            raise UsageError(
                f"points {twin} and {name} of one sweep have the same settings: "
                "they cannot be matched to the other sweep's",
                hint="compare sweeps whose point folders name every swept key",
            )
    return {name: _identity(row, keys) for name, row in rows.items()}


def match_points(before: Rows, after: Rows, keys: tuple[str, ...]) -> dict[str, str]:
    """before name -> after name of the same point: equal identities first, then a point whose
    settings are partly unknown (never ran) paired with the one point that agrees with it."""
    ids_a, ids_b = _unique(before, keys), _unique(after, keys)
    by_identity = {identity: name for name, identity in ids_b.items()}
    pairs = {n: by_identity[i] for n, i in ids_a.items() if i in by_identity}
    free = [n for n in ids_b if n not in pairs.values()]
    for name, identity in ids_a.items():
        if name in pairs:
            continue
        candidates = [other for other in free if _agrees(identity, ids_b[other])]
        if len(candidates) == 1:
            pairs[name] = candidates[0]
            free.remove(candidates[0])
    return pairs


def _side_problem(side: str, name: str, sweep: SweepSide) -> str | None:
    """Why `sweep`'s point `name` has no profile to compare, or None when it has one."""
    row = sweep.rows[name]
    if row.status != "ok":
        return f"{side} {row.status}"
    if name not in sweep.profiles:
        return f"{side} profile lost: {sweep.lost.get(name, 'not read')}"
    return None


def _compare_point(
    name: str, before: Profile, after: Profile, threshold: float | None, metric: str | None
) -> Comparison:
    try:
        return compare(before, after, fail_on_regression_pct=threshold, metric=metric)
    except UsageError as err:
        raise UsageError(f"point {name}: {err.message}", hint=err.hint) from err


def compare_sweeps(
    before: SweepSide,
    after: SweepSide,
    *,
    fail_on_regression_pct: float | None = None,
    metric: str | None = None,
) -> SweepComparison:
    """One PointDelta per point of either sweep, in the before sweep's order. Two points of one
    sweep with the same identity are a UsageError (the sweeps cannot be matched); a point the
    gate cannot judge (no trials, modes that differ) is a UsageError naming it."""
    keys = point_keys(before.rows, after.rows)
    pairs = match_points(before.rows, after.rows, keys)
    rows: list[PointDelta] = []
    for name, row in before.rows.items():
        other = pairs.get(name)
        result = None
        if other is None:
            why: str | None = "only in before"
        else:
            why = _side_problem("before", name, before) or _side_problem("after", other, after)
        if why is None and other is not None:
            result = _compare_point(
                name, before.profiles[name], after.profiles[other], fail_on_regression_pct, metric
            )
        rows.append(PointDelta(name, _axes(row, keys), result, why))
    paired = set(pairs.values())
    rows += [
        PointDelta(name, _axes(row, keys), None, "only in after")
        for name, row in after.rows.items()
        if name not in paired
    ]
    return SweepComparison(tuple(rows), fail_on_regression_pct, keys[len(AXES) :])
