"""A `--repeat` aggregate keeps every trial's notes, not only the last trial's: a note all trials
made reads once, a note some made names them."""

from __future__ import annotations

import warnings

import msgspec.structs

from libreyolo.analysis.repeat import aggregate
from libreyolo.measure.from_config import Note, one_line_warnings
from tests.compute_profiles import gpu_profile


def _trial(*notes: str) -> object:
    return msgspec.structs.replace(gpu_profile(), notes=list(notes))


def test_notes_of_every_trial_reach_the_aggregate() -> None:
    trials = [
        _trial("random weights", "host busy: 30% CPU wait"),
        _trial("random weights"),
        _trial("random weights", "host busy: 30% CPU wait", "swap grew 12 MB"),
    ]
    assert aggregate(trials).notes == [  # type: ignore[arg-type]
        "random weights",
        "trials 1, 3 of 3: host busy: 30% CPU wait",
        "trial 3 of 3: swap grew 12 MB",
    ]


def test_a_note_repeated_within_a_trial_counts_once() -> None:
    trials = [_trial("a", "a"), _trial("a")]
    assert aggregate(trials).notes == ["a"]  # type: ignore[arg-type]


def test_each_warning_is_shown_once_across_trials() -> None:
    lines: list[tuple[str, str]] = []
    with one_line_warnings(lambda kind, text: lines.append((kind, text))):
        for _ in range(3):  # three trials each load the same random weights
            warnings.warn("random weights", UserWarning, stacklevel=1)
            warnings.warn("imgsz rounded", Note, stacklevel=1)
    assert lines == [("warning", "random weights"), ("note", "imgsz rounded")]
