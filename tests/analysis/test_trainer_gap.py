"""`compare` of the built-in step against libreyolo 1.6.0's own trainer at the same settings
states the gap, part by part, on two real profiles (tests/fixtures/trainer_gap)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from libreyolo.analysis.phases import phase_breakdown
from libreyolo.analysis.trainer_gap import PARITY_PCT, trainer_gap
from libreyolo.document.files import load
from libreyolo.document.model import Profile
from tests.conftest import invoke

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trainer_gap"
TRAINER, BUILTIN = FIXTURES / "trainer.profile.json", FIXTURES / "builtin.profile.json"


@pytest.fixture(scope="module")
def pair() -> tuple[Profile, Profile]:
    return load(str(TRAINER)), load(str(BUILTIN))


def test_each_part_is_both_sides_phases(pair: tuple[Profile, Profile]) -> None:
    trainer, builtin = pair
    assert trainer.run.trainer is not None and builtin.run.trainer is None
    gap = trainer_gap(trainer, builtin)
    assert gap is not None and gap.trainer_side == "before"
    for side, profile in (("builtin", builtin), ("trainer", trainer)):
        rows = {r.phase: r.wall_ms_per_step for r in phase_breakdown(profile).rows}
        parts = {p.part: getattr(p, f"{side}_ms") for p in gap.parts}
        assert parts["data"] == pytest.approx(rows["dataload"] + rows["to_device"], abs=1e-3)
        assert parts["forward+loss"] == pytest.approx(rows["forward"], abs=1e-3)
        assert parts["backward"] == pytest.approx(rows["backward"], abs=1e-3)
        assert parts["optimizer+EMA"] == pytest.approx(rows["optimizer"], abs=1e-3)
        shares = [getattr(p, f"{side}_share") for p in gap.parts]
        assert sum(shares) == pytest.approx(1.0, abs=1e-3)
    # the measured figures of these two runs
    assert (gap.builtin_img_per_s, gap.trainer_img_per_s) == (16.24, 15.28)
    assert gap.img_per_s_gap_pct == pytest.approx(6.28, abs=0.01)
    gaps = {p.part: round(p.gap_pct or 0.0, 1) for p in gap.parts}
    assert gaps == {"data": 119.2, "forward+loss": -16.2, "backward": -6.6, "optimizer+EMA": -0.2}
    assert gap.within_pct == PARITY_PCT == 15.0
    assert gap.beyond == ("data", "forward+loss")
    # the same pair the other way round: the same gap, the trainer now "after"
    flipped = trainer_gap(builtin, trainer)
    assert flipped is not None and flipped.trainer_side == "after"
    assert flipped.parts == gap.parts


def test_only_a_built_in_and_a_trainer_profile_have_a_gap(pair: tuple[Profile, Profile]) -> None:
    trainer, builtin = pair
    assert trainer_gap(builtin, builtin) is None
    assert trainer_gap(trainer, trainer) is None
    inference = msgspec.structs.replace(builtin, kind="infer")
    assert trainer_gap(trainer, inference) is None


def test_compare_prints_and_writes_the_gap() -> None:
    text = invoke(["profile", "compare", str(TRAINER), str(BUILTIN)])
    assert text.status == 0, text.stderr
    lines = text.stdout.splitlines()
    at = lines.index(
        "built-in step vs libreyolo train (before is the trainer): img/s 16.24 vs 15.28 (+6 %)"
    )
    assert lines[at + 1 : at + 7] == [
        "  part                       built-in             trainer      gap",
        "  data                 23.0 ms (10 %)       10.5 ms (4 %)   +119 %",
        "  forward+loss         95.0 ms (39 %)     113.5 ms (45 %)    -16 %",
        "  backward             89.2 ms (37 %)      95.5 ms (38 %)     -7 %",
        "  optimizer+EMA        35.1 ms (14 %)      35.2 ms (14 %)      0 %",
        "  beyond ±15 %: data, forward+loss (docs/workload-parity.md)",
    ]
    doc = json.loads(invoke(["profile", "compare", str(TRAINER), str(BUILTIN), "--json"]).stdout)
    gap = doc["trainer_gap"]
    assert set(gap) == {"trainer_side", "img_per_s", "parts", "within_pct", "beyond"}
    assert gap["img_per_s"]["builtin"] == 16.24 and gap["beyond"] == ["data", "forward+loss"]
    assert [p["part"] for p in gap["parts"]] == [
        "data",
        "forward+loss",
        "backward",
        "optimizer+EMA",
    ]
    assert set(gap["parts"][0]) == {
        "part", "builtin_ms", "trainer_ms", "builtin_share", "trainer_share", "gap_pct",
        "share_gap_pct",
    }  # fmt: skip
    plain = json.loads(invoke(["profile", "compare", str(BUILTIN), str(BUILTIN), "--json"]).stdout)
    assert plain["trainer_gap"] is None
