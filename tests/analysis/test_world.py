"""The world of a multi-process run: skew, straggler and its cause, communication, on hand-built
ranks whose numbers say what the verdict must be."""

from __future__ import annotations

from pathlib import Path

import msgspec.structs
import pytest

from libreyolo.analysis.build import finalize
from libreyolo.analysis.scaling import scaling
from libreyolo.analysis.world import KEYS, MIN_STRAGGLER_STEPS, own_phase_ms, world_metrics
from libreyolo.analysis.world_profile import world_profile
from libreyolo.document.files import save
from libreyolo.document.model import Profile, RunInfo, Samples, StepSample, Tool
from libreyolo.document.world import RankRecord, World
from tests.conftest import invoke

STEPS = 6  # measured steps of each rank's window (the done-when run's)


def _rank(
    rank: int,
    *,
    step_ms: float = 400.0,
    comm_ms: float = 60.0,
    exposed_pct: float = 100.0,
    dataload_ms: float = 10.0,
    backward_ms: float = 150.0,
    contended: bool = False,
) -> RankRecord:
    return RankRecord(
        rank=rank,
        device="cpu",
        profile=f"rank{rank}/profile.json",
        step_ms=step_ms,
        img_per_s=2 * 1000 / step_ms,
        phase_ms={
            "dataload": dataload_ms,
            "to_device": 0.1,
            "forward": 170.0,
            "backward": backward_ms,
            "optimizer": 70.0,
        },
        comm_ms=comm_ms,
        comm_exposed_pct=exposed_pct,
        contended=contended,
    )


def _world(*ranks: RankRecord) -> World:
    return World(
        world_size=len(ranks),
        backend="gloo",
        launcher="spawn",
        global_batch=2 * len(ranks),
        batch_per_rank=2,
        sync_bn=False,
        ranks=list(ranks),
    )


def test_a_balanced_world_names_no_straggler() -> None:
    metrics = world_metrics(_world(_rank(0), _rank(1, comm_ms=66.0)), measured_steps=STEPS)
    assert set(metrics) == set(KEYS)
    assert metrics["world_size"] == 2 and metrics["global_batch"] == 4
    assert metrics["global_img_per_s"] == 10.0  # 4 images every 400 ms
    # own work 340 vs 334 ms: 1.8 % apart
    assert metrics["rank_skew_pct"] == 1.8
    assert metrics["straggler_rank"] is None and metrics["straggler_cause"] is None
    assert metrics["comm_wait_ms"] == 60.0


def test_the_rank_that_waits_least_is_the_straggler_and_its_loader_the_cause() -> None:
    # rank 1 loads for 200 ms more each step; rank 0 waits for it in the all-reduce, inside
    # its backward, so both steps last the same: the step time alone shows no skew
    fast = _rank(0, step_ms=600.0, comm_ms=260.0, backward_ms=350.0)
    slow = _rank(1, step_ms=600.0, comm_ms=60.0, dataload_ms=210.0)
    metrics = world_metrics(_world(fast, slow), measured_steps=STEPS)
    assert metrics["rank_skew_pct"] == pytest.approx(100 * (540 / 340 - 1), abs=0.05)
    assert metrics["straggler_rank"] == 1
    assert metrics["straggler_cause"] == "dataload"
    assert metrics["straggler_excess_ms"] == 200.0
    assert metrics["comm_wait_ms"] == 60.0  # the wire's own cost: the straggler's wait


def test_a_wait_split_by_phase_leaves_each_phase_where_it_fell() -> None:
    # gloo: rank 0 waits 180 ms in forward (rank 1's loss all-reduce starts late) and 30 ms
    # in backward; taken from backward alone, forward would look like the slow phase
    fast = msgspec.structs.replace(
        _rank(0, step_ms=600.0, comm_ms=210.0, backward_ms=180.0),
        phase_ms={"dataload": 3.0, "forward": 350.0, "backward": 180.0, "optimizer": 60.0},
        wait_ms={"forward": 180.0, "backward": 30.0},
    )
    slow = msgspec.structs.replace(
        _rank(1, step_ms=600.0, comm_ms=30.0),
        phase_ms={"dataload": 183.0, "forward": 185.0, "backward": 165.0, "optimizer": 60.0},
        wait_ms={"forward": 15.0, "backward": 15.0},
    )
    assert own_phase_ms(fast) == {
        "dataload": 3.0,
        "forward": 170.0,
        "backward": 150.0,
        "optimizer": 60.0,
    }
    metrics = world_metrics(_world(fast, slow), measured_steps=STEPS)
    assert metrics["straggler_rank"] == 1
    assert metrics["straggler_cause"] == "dataload" and metrics["straggler_excess_ms"] == 180.0
    # without a split, the whole wait comes out of backward (GPU collectives)
    unsplit = msgspec.structs.replace(fast, wait_ms={})
    assert own_phase_ms(unsplit)["forward"] == 350.0 and own_phase_ms(unsplit)["backward"] == 0.0


def test_no_straggler_is_named_on_a_contended_rank() -> None:
    fast = _rank(0, step_ms=600.0, comm_ms=260.0, backward_ms=350.0)
    slow = _rank(1, step_ms=600.0, comm_ms=60.0, dataload_ms=210.0, contended=True)
    metrics = world_metrics(_world(fast, slow), measured_steps=STEPS)
    assert metrics["rank_skew_pct"] is not None and metrics["rank_skew_pct"] > 50
    assert metrics["straggler_rank"] is None


def test_no_straggler_is_named_over_a_window_too_short_to_tell_a_rank_from_a_step() -> None:
    fast = _rank(0, step_ms=600.0, comm_ms=260.0, backward_ms=350.0)
    slow = _rank(1, step_ms=600.0, comm_ms=60.0, dataload_ms=210.0)
    world = _world(fast, slow)
    assert world_metrics(world, measured_steps=MIN_STRAGGLER_STEPS)["straggler_rank"] == 1
    metrics = world_metrics(world, measured_steps=MIN_STRAGGLER_STEPS - 1)
    assert metrics["rank_skew_pct"] is not None and metrics["rank_skew_pct"] > 50
    assert metrics["straggler_rank"] is None and metrics["straggler_cause"] is None
    from libreyolo.render.world_text import world_lines

    (skew,) = [line for line in world_lines(world, metrics) if line.startswith("skew")]
    assert skew.endswith("; no straggler named over fewer than 5 measured steps")


def test_without_collective_figures_the_skew_is_the_step_times() -> None:
    no_trace = msgspec.structs.replace(_rank(0), comm_ms=None, comm_exposed_pct=None)
    metrics = world_metrics(_world(no_trace, _rank(1)), measured_steps=STEPS)
    assert metrics["comm_wait_ms"] is None
    assert metrics["rank_skew_pct"] == pytest.approx(100 * (400 / 340 - 1), abs=0.05)


def _profile(rank: int, *, step_ms: float, dataload_ms: float) -> Profile:
    steps = [
        StepSample(
            index=i,
            synced=False,
            wall_ms=step_ms,
            dataload_ms=dataload_ms,
            phase_ms={"dataload": dataload_ms},
        )
        for i in range(STEPS)
    ]
    return finalize(
        Profile(
            kind="train",
            created=None,
            tool=Tool(version="2.0.0"),
            run=RunInfo(mode="training", batch=2, device="cpu", pid=100 + rank),  # type: ignore[arg-type]
            samples=Samples(steps=steps),
        )
    )


def test_the_world_profile_is_rank_zeros_with_every_rank_recorded() -> None:
    ranks = [
        _profile(0, step_ms=500.0, dataload_ms=5.0),
        _profile(1, step_ms=500.0, dataload_ms=5.0),
    ]
    world = world_profile(ranks, backend="gloo", launcher="spawn", global_batch=4)
    assert world.world is not None
    assert [r.profile for r in world.world.ranks] == ["rank0/profile.json", "rank1/profile.json"]
    assert [r.pid for r in world.world.ranks] == [100, 101]
    assert world.world.batch_per_rank == 2 and world.world.sync_bn is False
    assert world.metrics["world_size"] == 2 and world.metrics["global_img_per_s"] == 8.0
    assert world.run == ranks[0].run  # rank 0's own run, its per-rank batch
    # a one-process profile has the world's keys, each null
    assert all(ranks[0].metrics[key] is None for key in KEYS)


def test_a_straggler_verdict_names_the_rank_and_its_cause() -> None:
    fast = _rank(0, step_ms=600.0, comm_ms=260.0, backward_ms=350.0)
    slow = _rank(1, step_ms=600.0, comm_ms=60.0, dataload_ms=210.0)
    base = _profile(0, step_ms=600.0, dataload_ms=10.0)
    profile = finalize(msgspec.structs.replace(base, world=_world(fast, slow)))
    verdict = profile.verdict
    assert verdict is not None and verdict.bound == "straggler"
    assert verdict.why.startswith(
        "rank 1's own work (its step less its collective wait) is 58.8% above the fastest rank's"
    )
    assert "its dataload takes 200.0 ms per step more than the other ranks'" in verdict.why
    assert verdict.levers[0] == "more --workers on the straggler's host"
    assert profile.metrics["bound"] == "straggler"


def test_communication_is_the_verdict_when_every_rank_waits_on_the_wire() -> None:
    base = _profile(0, step_ms=400.0, dataload_ms=10.0)
    waiting = _world(_rank(0, comm_ms=120.0), _rank(1, comm_ms=125.0))
    profile = finalize(msgspec.structs.replace(base, world=waiting))
    verdict = profile.verdict
    assert verdict is not None and verdict.bound == "communication", verdict
    assert verdict.why.startswith("every rank waits ≥ 120.0 ms per step (30% of the step)")
    assert verdict.levers[0].startswith("a larger per-rank batch")
    overlapped = _world(_rank(0, exposed_pct=20.0), _rank(1, exposed_pct=20.0))
    quiet = finalize(msgspec.structs.replace(base, world=overlapped)).verdict
    assert quiet is not None and quiet.bound not in ("communication", "straggler")


def test_compare_of_one_rank_against_two_reports_scaling_efficiency(tmp_path: Path) -> None:
    one = _profile(0, step_ms=400.0, dataload_ms=5.0)  # batch 2 at 400 ms: 5 img/s
    ranks = [
        _profile(0, step_ms=500.0, dataload_ms=5.0),
        _profile(1, step_ms=500.0, dataload_ms=5.0),
    ]
    two = world_profile(ranks, backend="gloo", launcher="spawn", global_batch=4)
    found = scaling(one, two)
    assert found is not None
    assert found.ranks == (1, 2) and found.global_batch == (2, 4)
    assert found.img_per_s == (5.0, 8.0)  # 4 images every 500 ms over the world
    assert found.speedup == pytest.approx(1.6) and found.efficiency == pytest.approx(0.8)
    assert scaling(one, one) is None  # the same ranks: nothing to say
    before, after = save(one, tmp_path / "one.json"), save(two, tmp_path / "two.json")
    text = invoke(["profile", "compare", str(before), str(after)])
    assert text.status == 0, text.stderr
    assert (
        "scaling        1 -> 2 ranks: 5.00 -> 8.00 img/s over all ranks, 1.60x of an ideal "
        "2.00x: 80% scaling efficiency"
    ) in text.stdout.splitlines()
    as_json = invoke(["profile", "compare", str(before), str(after), "--json"]).json()
    assert isinstance(as_json, dict)
    assert as_json["scaling"] == {
        "ranks": [1, 2],
        "global_batch": [2, 4],
        "img_per_s": [5.0, 8.0],
        "speedup": 1.6,
        "efficiency": 0.8,
    }


def test_a_contended_world_names_its_own_ranks_as_the_load() -> None:
    from tests.analysis.test_contention import _profile as starved_profile

    starved = starved_profile([20.0, 18.0, 22.0, 20.0], mode="training")  # 50 % wait
    ranks = [
        msgspec.structs.replace(_rank(0, contended=True), cpus_used=0.97),
        msgspec.structs.replace(_rank(1, contended=True), cpus_used=0.95),
    ]
    verdict = finalize(msgspec.structs.replace(starved, world=_world(*ranks), metrics={})).verdict
    assert verdict is not None and verdict.bound == "contended"
    assert verdict.why.endswith(
        "the 2 ranks kept 1.9 of 2 CPUs busy: their threads (gloo's among them) oversubscribe them"
    )
    assert verdict.levers[0] == "fewer ranks on this host (--nproc), or --threads 1 per rank"
    one = finalize(msgspec.structs.replace(starved, metrics={})).verdict
    assert one is not None and "ranks" not in one.why and "--nproc" not in one.levers[0]
