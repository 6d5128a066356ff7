"""Contention metrics and the `contended` verdict, on hand-built host records."""

from __future__ import annotations

import msgspec.structs
import pytest

from libreyolo.analysis import contention
from libreyolo.analysis.build import finalize
from libreyolo.analysis.repeat import aggregate
from libreyolo.analysis.verdict import decide
from libreyolo.document.model import (
    Agreement,
    Execution,
    Host,
    Profile,
    RunInfo,
    Samples,
    StepSample,
    Tool,
)


def _steps(waits: list[float], cpu_ms: float = 20.0, wall_ms: float = 30.0) -> list[StepSample]:
    return [
        StepSample(index=i, synced=False, wall_ms=wall_ms, cpu_ms=cpu_ms, cpu_wait_ms=w)
        for i, w in enumerate(waits)
    ]


def _profile(
    waits: list[float],
    *,
    steal: float | None = 0.0,
    cpu_ms: float = 20.0,
    workers: int = 0,
    mode: str = "inference",
    host: Host | bool | None = True,
) -> Profile:
    steps = _steps(waits, cpu_ms)
    record: Host | None
    if host is True:
        record = Host(
            measurable=True,
            usable_cpus=2,
            intra_op_threads=2,
            num_workers=workers,
            load_avg_1m=1.3,
            runnable_avg=4.1,
            steal_frac=steal,
            cpu_ms=cpu_ms * len(waits),
            cpu_wait_ms=sum(waits),
        )
    else:
        record = host or None
    latency = [s.wall_ms for s in steps] if mode == "inference" else []
    return finalize(
        Profile(
            kind="infer" if mode == "inference" else "train",
            created=None,
            tool=Tool(version="2.0.0"),
            run=RunInfo(mode=mode, batch=1),  # type: ignore[arg-type]
            samples=Samples(steps=steps, latency_ms=latency),
            host=record,
        )
    )


def test_a_quiet_window_is_not_contended_and_keeps_its_verdict() -> None:
    profile = _profile([0.5, 0.4, 0.6, 0.5])
    m = profile.metrics
    assert m["cpu_wait_frac"] == pytest.approx(2.0 / 82.0, abs=1e-3)
    assert m["cpu_wait_ms_per_step"] == 0.5
    assert m["steal_frac"] == 0.0
    assert m["contended"] is False
    assert profile.verdict is not None and profile.verdict.bound == "compute"
    assert profile.verdict.quiet_bound is None


def test_a_starved_window_is_contended_with_what_it_measured_beside_it() -> None:
    profile = _profile([20.0, 18.0, 22.0, 20.0])  # 80 ms wait against 80 ms on CPU: 50 %
    verdict = profile.verdict
    assert profile.metrics["cpu_wait_frac"] == 0.5
    assert profile.metrics["contended"] is True
    assert profile.metrics["bound"] == "contended"
    assert verdict is not None and verdict.bound == "contended"
    assert verdict.why.startswith("threads waited 50% of their runnable time for a CPU")
    assert "4.1 runnable tasks for 2 CPUs" in verdict.why
    # 80 ms on CPU over 120 ms of steps: 0.7 CPUs of 2 busy, others held the rest
    assert "this run kept 0.7 of 2 CPUs busy: other processes held the rest" in verdict.why
    # CPU times inflated by the wait name no bottleneck: only what was measured is said
    assert verdict.quiet_bound is None
    assert verdict.quiet_why == (
        "no share of the step could be measured (inflated unevenly by the wait for a CPU: they "
        "name no bottleneck)"
    )
    assert verdict.evidence["cpu_wait_frac"] == 0.5 and verdict.evidence["usable_cpus"] == 2
    assert "fewer --workers" not in verdict.levers  # inference has no loader workers
    assert "stop the other work on this machine" in verdict.levers


def test_a_starved_window_still_says_its_mode_disagrees_with_eager() -> None:
    # the detections differ whatever the host's load: a busy host must not hide that
    wrong = Agreement(num_images=1, reference_boxes=300, boxes=280, recall=0.0, precision=0.0)
    starved = _profile([20.0, 18.0, 22.0, 20.0])
    executed = Execution(name="onnxruntime", channels_last=False, torch="2.14.1", agreement=wrong)
    verdict = finalize(msgspec.structs.replace(starved, execution=executed, metrics={})).verdict
    assert verdict is not None and verdict.bound == "contended"
    assert verdict.why.startswith("threads waited 50% of their runnable time for a CPU; ")
    assert "; onnxruntime disagrees with eager fp32 (recall " in verdict.why
    assert verdict.evidence["agreement"] == 0.0 and verdict.evidence["cpu_wait_frac"] == 0.5
    assert verdict.levers[0].startswith("check the mode's outputs against eager fp32")
    assert "stop the other work on this machine" in verdict.levers
    agreeing = msgspec.structs.replace(wrong, recall=1.0, precision=1.0, max_rel_diff=1e-6)
    fine = msgspec.structs.replace(executed, agreement=agreeing)
    quiet = finalize(msgspec.structs.replace(starved, execution=fine, metrics={})).verdict
    assert quiet is not None and "disagrees" not in quiet.why and "agreement" not in quiet.evidence


def test_an_oversubscribed_run_is_told_its_own_threads_did_it() -> None:
    profile = _profile([25.0] * 4, cpu_ms=50.0, workers=8, mode="training")
    verdict = profile.verdict
    assert verdict is not None and verdict.bound == "contended"
    assert "its own threads and workers oversubscribe them" in verdict.why
    assert "fewer --workers" in verdict.levers


def test_steal_alone_makes_a_window_contended() -> None:
    profile = _profile([0.1] * 4, steal=0.15)
    assert profile.metrics["contended"] is True
    assert profile.verdict is not None
    assert "the hypervisor stole 15% of the host's CPU time" in profile.verdict.why


def test_the_threshold_is_inclusive() -> None:
    # wait / (wait + cpu) = 5 / 25 = 0.2 exactly
    assert _profile([5.0], cpu_ms=20.0).metrics["contended"] is True
    assert _profile([4.9], cpu_ms=20.0).metrics["contended"] is False


@pytest.mark.parametrize(
    ("host", "line"),
    [(None, contention.UNKNOWN), (Host(measurable=False), contention.UNMEASURABLE)],
)
def test_without_host_samples_contention_is_null_and_said(host: Host | None, line: str) -> None:
    profile = _profile([1.0], host=host if host is not None else False)
    m = profile.metrics
    assert (m["cpu_wait_frac"], m["steal_frac"], m["cpu_wait_ms_per_step"], m["contended"]) == (
        None,
        None,
        None,
        None,
    )
    assert contention.state(profile) == line
    assert profile.verdict is not None and profile.verdict.bound == "compute"


def test_hardest_hit_steps_come_first() -> None:
    profile = _profile([1.0, 30.0, 5.0, 30.0, 0.0])
    rows = contention.hardest_hit(profile)
    assert [r.index for r in rows] == [1, 3, 2]
    assert rows[0].cpu_wait_frac == 0.6
    assert [r.index for r in contention.step_waits(profile)] == [0, 1, 2, 3, 4]


def test_one_contended_trial_makes_the_repeat_contended() -> None:
    quiet, busy = _profile([0.5] * 4), _profile([20.0] * 4)
    assert aggregate([busy, quiet]).metrics["contended"] is True
    assert aggregate([quiet, quiet]).metrics["contended"] is False
    unknown = msgspec.structs.replace(quiet, metrics=quiet.metrics | {"contended": None})
    assert aggregate([unknown, unknown]).metrics["contended"] is None


def _staged(profile: Profile, pre_ms: float, fwd_ms: float, post_ms: float) -> Profile:
    """`profile` with a measured stage split, its verdict decided again."""
    stage_ms = {"preprocess": [pre_ms], "forward": [fwd_ms], "postprocess": [post_ms]}
    samples = msgspec.structs.replace(profile.samples, stage_ms=stage_ms)
    return finalize(msgspec.structs.replace(profile, samples=samples, verdict=None, metrics={}))


def test_a_starved_stage_split_names_no_bottleneck_but_says_the_shares() -> None:
    quiet = _staged(_profile([0.5] * 4), 50.0, 40.0, 2.0)  # the quiet rule: preprocess
    assert quiet.verdict is not None and quiet.verdict.bound == "preprocess"
    starved = _staged(_profile([20.0] * 4), 10.0, 60.0, 2.0)  # forward inflated most
    verdict = starved.verdict
    assert verdict is not None and verdict.bound == "contended" and verdict.quiet_bound is None
    assert verdict.quiet_why == (
        "preprocess 14%, forward 83%, postprocess 3% of the step (inflated unevenly by the wait "
        "for a CPU: they name no bottleneck)"
    )


def test_what_starving_cannot_make_is_still_named() -> None:
    starved = _profile([20.0] * 4)
    metrics = dict(starved.metrics) | {"memory_pressure": True, "cuda_mallocs_per_step": 12}
    verdict = decide(starved, metrics)  # allocator counts: no CPU time in the evidence
    assert (verdict.bound, verdict.quiet_bound) == ("contended", "memory-pressure")
    assert verdict.quiet_why is not None and verdict.quiet_why.startswith("allocator thrash")
