"""Two sweeps compared point by point: points matched by their axes (batch, imgsz, amp,
threads), each matched pair of ok points compared like two profiles, the regression gate (when
asked for) applied to every one. Pure: the caller reads the rows and the points' profiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from libreyolo.analysis.compare import Comparison, compare
from libreyolo.errors import UsageError

if TYPE_CHECKING:
    from libreyolo.analysis.gate import Gate
    from libreyolo.document.model import Profile

AXES = ("batch", "imgsz", "amp", "threads")
Rows = dict[str, dict[str, Any]]  # a sweep record's `points`: name -> row


@dataclass(frozen=True, slots=True)
class PointDelta:
    point: str  # the before sweep's point name (the after's when only it has the point)
    axes: dict[str, Any]
    comparison: Comparison | None
    not_compared: str | None  # why there is no comparison: "only in after", "before failed"


@dataclass(frozen=True, slots=True)
class SweepComparison:
    kind: ClassVar[str] = "sweep-compare"
    points: tuple[PointDelta, ...]
    threshold_pct: float | None  # --fail-on-regression, None without a gate

    @property
    def failed_gates(self) -> tuple[tuple[str | None, Gate], ...]:
        """(point, gate) of every point whose gate failed: the command exits 4 on any."""
        return tuple(
            (p.point, p.comparison.gate)
            for p in self.points
            if p.comparison is not None and p.comparison.gate and p.comparison.gate.failed
        )


def _key(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(repr(row.get(axis)) for axis in AXES)


def matched_profiles(before: Rows, after: Rows) -> list[tuple[str, str]]:
    """(before, after) profile paths of the points ok on both sides: what the caller must read."""
    after_by_key = {_key(row): row for row in after.values()}
    pairs = []
    for row in before.values():
        other = after_by_key.get(_key(row))
        if other is not None and row.get("profile") and other.get("profile"):
            pairs.append((str(row["profile"]), str(other["profile"])))
    return pairs


def _why_not(before: dict[str, Any], after: dict[str, Any] | None) -> str | None:
    """Why a before point has no comparison, or None when both sides have a profile."""
    if after is None:
        return "only in before"
    for side, row in (("before", before), ("after", after)):
        if not row.get("profile"):
            return f"{side} {row.get('status') or 'failed'}"
    return None


def compare_sweeps(
    before: Rows,
    after: Rows,
    profiles: dict[str, Profile],
    *,
    fail_on_regression_pct: float | None = None,
    metric: str | None = None,
) -> SweepComparison:
    """One PointDelta per point of either sweep, in the before sweep's order; `profiles` maps
    the paths `matched_profiles` named to their documents. A point the gate cannot judge (no
    trials) is a UsageError naming it."""
    after_by_key = {_key(row): (name, row) for name, row in after.items()}
    seen: set[tuple[str, ...]] = set()
    rows: list[PointDelta] = []
    for name, row in before.items():
        key = _key(row)
        seen.add(key)
        other = after_by_key.get(key, (None, None))[1]
        why = _why_not(row, other)
        result = None
        if why is None and other is not None:
            try:
                result = compare(
                    profiles[str(row["profile"])],
                    profiles[str(other["profile"])],
                    fail_on_regression_pct=fail_on_regression_pct,
                    metric=metric,
                )
            except UsageError as err:
                raise UsageError(f"point {name}: {err.message}", hint=err.hint) from err
        rows.append(PointDelta(name, {a: row.get(a) for a in AXES}, result, why))
    rows += [
        PointDelta(name, {a: row.get(a) for a in AXES}, None, "only in after")
        for key, (name, row) in after_by_key.items()
        if key not in seen
    ]
    return SweepComparison(tuple(rows), fail_on_regression_pct)
