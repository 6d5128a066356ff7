"""What a report page shows, gathered from the readers' own results. Pure.

A profile page is the results of `summary`, `phases`, `kernels` and `ops` for one profile (the
same calls, the same defaults), so every number on the page is one those readers print; a
comparison page is `compare`'s result plus both sides' pages; a sweep page is the sweep record
plus each ok point's summary and phases, and the batch search's record (`tune.json`) when a
search chose the points. Nothing is computed here that a reader does not show.
"""

from __future__ import annotations

from dataclasses import dataclass

from libreyolo.analysis.compare import Comparison, compare
from libreyolo.analysis.kernels import KernelTable, top_kernels
from libreyolo.analysis.ops import OpTable, top_ops
from libreyolo.analysis.phases import PhaseBreakdown, phase_breakdown
from libreyolo.analysis.summary import Summary, summarize
from libreyolo.document.model import Profile
from libreyolo.document.sweep_model import SweepRecord
from libreyolo.document.tune_model import TuneRecord

TOP_ROWS = 20  # `kernels` and `ops` defaults


@dataclass(frozen=True, slots=True)
class ProfileReport:
    source: str
    summary: Summary
    phases: PhaseBreakdown
    kernels: KernelTable
    ops: OpTable


@dataclass(frozen=True, slots=True)
class CompareReport:
    before: ProfileReport
    after: ProfileReport
    comparison: Comparison


@dataclass(frozen=True, slots=True)
class SweepReport:
    source: str
    record: SweepRecord  # the sweep record, as `summary <sweep dir> --json` prints it
    points: dict[str, ProfileReport]  # ok points whose profile could be read, by point name
    unreadable: dict[str, str]  # ok points whose profile could not be read: the reason
    tune: TuneRecord | None = None  # the batch search, as `summary --json` prints it (`tune`)


def profile_report(profile: Profile, source: str) -> ProfileReport:
    """The four readers' results for one profile, with their default arguments."""
    return ProfileReport(
        source=source,
        summary=summarize(profile),
        phases=phase_breakdown(profile),
        kernels=top_kernels(profile, top=TOP_ROWS),
        ops=top_ops(profile, top=TOP_ROWS),
    )


def compare_report(
    before: Profile, after: Profile, sources: tuple[str, str], *, top: int = 10
) -> CompareReport:
    """`compare`'s result for the pair, and each side's own report."""
    return CompareReport(
        before=profile_report(before, sources[0]),
        after=profile_report(after, sources[1]),
        comparison=compare(before, after, top=top),
    )


def sweep_report(
    record: SweepRecord,
    source: str,
    profiles: dict[str, Profile],
    unreadable: dict[str, str],
    tune: TuneRecord | None = None,
) -> SweepReport:
    """The sweep record, the ok points' reports (`profiles` by point name) and the batch
    search's record, if any."""
    return SweepReport(
        source=source,
        record=record,
        points={name: profile_report(p, name) for name, p in profiles.items()},
        unreadable=dict(unreadable),
        tune=tune,
    )
