"""How far the built-in training step is from libreyolo 1.x's own trainer, phase by phase.

Role: when `compare` holds a profile of this package's step beside one of `--trainer` (1.x's
`libreyolo train`, timed through its own hooks), say the gap: img/s both ways and, for each
part of a step (data, forward with the loss, backward, optimizer with the EMA), its time per
step and share of the step on each side, the gap in per cent, and whether it is within the
`PARITY_PCT` this package holds its step to (docs/workload-parity.md). Pure.
Must not: judge significance (compare's trials do), or read anything but the two profiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from libreyolo.analysis import stats
from libreyolo.analysis.phases import phase_breakdown
from libreyolo.document.mode import Mode
from libreyolo.document.model import Profile
from libreyolo.document.phases import BACKWARD, DATALOAD, FORWARD, OPTIMIZER, TO_DEVICE

PARITY_PCT = 15.0  # the built-in step is held within this of the trainer (issue 42)
# Parts of a step as both sides time them: 1.x's hooks and our phases share the names.
PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("data", (DATALOAD, TO_DEVICE)),
    ("forward+loss", (FORWARD,)),
    (BACKWARD, (BACKWARD,)),
    ("optimizer+EMA", (OPTIMIZER,)),
)


@dataclass(frozen=True, slots=True)
class PartGap:
    """One part of a step on both sides: ms per step and share of the four parts."""

    part: str
    builtin_ms: float
    trainer_ms: float
    builtin_share: float
    trainer_share: float

    @property
    def gap_pct(self) -> float | None:
        """(built-in - trainer) / trainer, in per cent; None when the trainer's part is 0."""
        if self.trainer_ms <= 0:
            return None
        return (self.builtin_ms - self.trainer_ms) / self.trainer_ms * 100

    @property
    def share_gap_pct(self) -> float:
        """The difference of the two shares, in percentage points."""
        return (self.builtin_share - self.trainer_share) * 100


@dataclass(frozen=True, slots=True)
class TrainerGap:
    """The built-in step against the trainer's at the settings compare warns about."""

    trainer_side: Literal["before", "after"]
    builtin_img_per_s: float | None
    trainer_img_per_s: float | None
    parts: tuple[PartGap, ...]
    within_pct: float = PARITY_PCT

    @property
    def img_per_s_gap_pct(self) -> float | None:
        """(built-in - trainer) / trainer img/s, in per cent."""
        ours, theirs = self.builtin_img_per_s, self.trainer_img_per_s
        if ours is None or not theirs:
            return None
        return (ours - theirs) / theirs * 100

    @property
    def beyond(self) -> tuple[str, ...]:
        """What is further apart than `within_pct`: `img/s` and the parts whose time or share
        (in points) differs by more."""
        found = []
        if (gap := self.img_per_s_gap_pct) is not None and abs(gap) > self.within_pct:
            found.append("img/s")
        for part in self.parts:
            ms = part.gap_pct
            if (ms is not None and abs(ms) > self.within_pct) or abs(
                part.share_gap_pct
            ) > self.within_pct:
                found.append(part.part)
        return tuple(found)


def trainer_gap(before: Profile, after: Profile) -> TrainerGap | None:
    """The gap when exactly one side is a `--trainer` training profile and the other this
    package's step; None otherwise (two of a kind, inference, or a side without phases)."""
    if before.kind != Mode.TRAIN or after.kind != Mode.TRAIN:
        return None
    sides = (before.run.trainer is not None, after.run.trainer is not None)
    if sides not in ((True, False), (False, True)):
        return None
    trainer, builtin = (before, after) if sides[0] else (after, before)
    ours, theirs = _parts_ms(builtin), _parts_ms(trainer)
    if ours is None or theirs is None:
        return None
    total_ours, total_theirs = sum(ours.values()), sum(theirs.values())
    if total_ours <= 0 or total_theirs <= 0:
        return None
    parts = tuple(
        PartGap(
            part=name,
            builtin_ms=round(ours[name], 3),
            trainer_ms=round(theirs[name], 3),
            builtin_share=round(ours[name] / total_ours, 4),
            trainer_share=round(theirs[name] / total_theirs, 4),
        )
        for name, _ in PARTS
    )
    return TrainerGap(
        trainer_side="before" if sides[0] else "after",
        builtin_img_per_s=stats.as_number(builtin.metrics.get("img_per_s")),
        trainer_img_per_s=stats.as_number(trainer.metrics.get("img_per_s")),
        parts=parts,
    )


def _parts_ms(profile: Profile) -> dict[str, float] | None:
    """Each part's wall ms per step (its phases summed); None without a timed phase split."""
    rows = {row.phase: row.wall_ms_per_step for row in phase_breakdown(profile).rows}
    found: dict[str, float] = {}
    for name, phases in PARTS:
        values = [rows.get(phase) for phase in phases]
        if all(v is None for v in values):
            return None
        found[name] = sum(v for v in values if v is not None)
    return found
