"""`libreyolo profile memory <oom_snapshot.pickle>`: a CUDA memory snapshot's out-of-memory
moment (the fixture's shape is torch's `_snapshot()`: tests/fixtures/oom/make_snapshot.py),
read as data only: a pickle that names a callable, one of another shape, a truncated one and
the prediction flags are refused with their exit codes, and nothing they name ever runs."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from tests.conftest import invoke

SNAPSHOT = Path(__file__).parents[1] / "fixtures" / "oom" / "oom_snapshot.pickle"


def test_the_snapshot_names_the_failed_request_and_the_sites_holding_the_most() -> None:
    result = invoke(["profile", "memory", str(SNAPSHOT)])
    assert (result.status, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        "oom      a 629.1 MB request failed with 944.8 MB allocated of 1.08 GB reserved "
        "(2 segments)",
        "allocated at (innermost frame outside torch), largest first:",
        "   629.1 MB  x2     forward (blocks.py:88)",
        "   210.8 MB  x2     assign (loss.py:212)",
        "   104.9 MB  x1     (no stack: allocated before the history was recorded)",
    ]
    top = invoke(["profile", "memory", str(SNAPSHOT), "--top", "1", "--json"]).json()
    assert top == {
        "snapshot": str(SNAPSHOT),
        "failed_request_mb": 629.1,
        "allocated_mb": 944.8,
        "reserved_mb": 1075.8,
        "num_segments": 2,
        "sites": [{"where": "forward (blocks.py:88)", "mb": 629.1, "num_blocks": 2}],
        "num_sites": 3,
    }
    more = invoke(["profile", "memory", str(SNAPSHOT), "--top", "1"]).stdout.splitlines()
    assert more[-1] == "  (2 more sites: raise --top)"


class Boom:
    """Unpickling an instance would call os.system: the reader must refuse it unrun."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os

        return (os.system, ("touch SHOULD_NOT_EXIST",))


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (pickle.dumps({"segments": [Boom()]}, protocol=4), "only plain data is read"),
        (pickle.dumps([1, 2, 3], protocol=4), "not a CUDA memory snapshot (no segments list)"),
        (pickle.dumps({"segments": "x"}, protocol=4), "not a CUDA memory snapshot"),
        (pickle.dumps({"segments": []}, protocol=4)[:-3], "not a readable memory snapshot"),
    ],
)
def test_a_hostile_or_foreign_snapshot_is_refused_unrun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, payload: bytes, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "snap.pickle"
    path.write_bytes(payload)
    result = invoke(["profile", "memory", str(path)])
    assert (result.status, result.stdout) == (1, "")
    assert result.stderr.startswith(f"failed to analyse {path}: ") and message in result.stderr
    assert len(result.stderr.splitlines()) <= 2  # the line and its hint
    assert not (tmp_path / "SHOULD_NOT_EXIST").exists()


def test_odd_fields_count_as_nothing_rather_than_crash(tmp_path: Path) -> None:
    odd = {
        "segments": [
            {"total_size": "big", "blocks": [{"size": -5, "state": "active_allocated"}, 7]},
            "not a segment",
            {"total_size": 10_000_000, "blocks": [{"size": True, "state": "active_allocated"}]},
        ],
        "device_traces": "none",
    }
    path = tmp_path / "odd.pickle"
    path.write_bytes(pickle.dumps(odd, protocol=4))
    out = invoke(["profile", "memory", str(path), "--json"]).json()
    assert isinstance(out, dict)
    assert (out["failed_request_mb"], out["allocated_mb"], out["reserved_mb"]) == (None, 0.0, 10.0)
    text = invoke(["profile", "memory", str(path)]).stdout.splitlines()[0]
    assert text == (
        "oom      0.0 MB allocated of 10.0 MB reserved (the history holds no failed request) "
        "(2 segments)"
    )


def test_prediction_flags_and_a_missing_file_exit_2(tmp_path: Path) -> None:
    refused = invoke(["profile", "memory", str(SNAPSHOT), "--batch", "32"])
    assert (refused.status, refused.stdout) == (2, "")
    assert "a memory snapshot has no prediction" in refused.stderr
    missing = invoke(["profile", "memory", str(tmp_path / "gone.pickle")])
    assert (missing.status, missing.stdout) == (2, "")
