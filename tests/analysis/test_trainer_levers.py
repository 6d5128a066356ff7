"""A profile of libreyolo 1.x's trainer names its levers in 1.x's `key=value` words."""

from __future__ import annotations

import msgspec.structs
import pytest

from libreyolo.analysis.build import finalize
from libreyolo.analysis.trainer_levers import in_trainer_words
from libreyolo.document.model import Trainer
from tests.profiles import training_profile


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        ("lower --batch", "lower batch="),
        ("more --workers", "more workers="),
        ("smaller --imgsz", "smaller imgsz="),
        ("larger --batch (amortise launches)", "larger batch= (amortise launches)"),
        ("cache images in RAM", "cache=ram (images in RAM)"),
        ("--threads N below the usable CPUs", "OMP_NUM_THREADS=N below the usable CPUs"),
        ("more CPU threads", "more CPU threads (OMP_NUM_THREADS)"),
        ("a smaller model", "a smaller model"),
    ],
)
def test_levers_in_1x_words(ours: str, theirs: str) -> None:
    assert in_trainer_words(ours) == theirs


def test_a_trainer_profile_gets_them_and_ours_keeps_its_flags() -> None:
    ours = training_profile("cpu")
    assert ours.verdict is not None and "smaller --imgsz" in ours.verdict.levers
    trainer = Trainer(python="/env/bin/python", libreyolo="1.6.0", torch="2.14.1")
    run = msgspec.structs.replace(ours.run, trainer=trainer)
    theirs = finalize(msgspec.structs.replace(ours, run=run))
    assert theirs.verdict is not None
    assert "smaller imgsz=" in theirs.verdict.levers
    assert not any("--" in lever for lever in theirs.verdict.levers)
