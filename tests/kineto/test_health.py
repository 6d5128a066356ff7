"""The trace health check: every real GPU fixture trace and a real CPU trace pass; each
corruption planted in a copy of a real trace fails the check it should, `summary` names it and
withholds the verdict, and `compare` refuses a significance call over a suspect trial."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec.structs
import pytest

from libreyolo.analysis.repeat import aggregate
from libreyolo.analysis.sweep import sweep_record
from libreyolo.document.files import save
from libreyolo.document.model import TraceAnalysis, Trial
from libreyolo.document.sweep_model import HeadlineMetrics, SweepRow
from libreyolo.kineto import analyse_trace
from libreyolo.render.sweep_text import sweep_lines
from tests.conftest import invoke
from tests.fixture_files import YOLO9T, fixture_file
from tests.profiles import repeat_profile

GPU_TRACES = Path(__file__).resolve().parents[1] / "fixtures" / "gpu_traces"
A100 = GPU_TRACES / "hta_a100_ddp_train_3steps.json.gz"
GPU_RECORDS = ("kernel", "gpu_memcpy", "gpu_memset")
CALLS = ("cuda_runtime", "cuda_driver")
CHECKS = [
    "launches_without_gpu_activity",
    "gpu_activity_without_launch",
    "starts_before_launch",
    "activity_outside_window",
    "zero_timestamps",
    "zero_duration_kernels",
]

Events = list[dict[str, Any]]


@pytest.mark.parametrize("path", sorted(GPU_TRACES.glob("*.json.gz")), ids=lambda p: p.name)
def test_every_real_gpu_trace_is_sound(path: Path) -> None:
    trace = analyse_trace(path, workers=1)
    assert trace.health is not None and not trace.health.suspect
    stepped = ["kernels_per_step"] if trace.num_steps >= 2 else []
    assert [c.name for c in trace.health.checks] == [*CHECKS, *stepped, "gpu_busy_within_step"]
    assert all(c.found == 0 for c in trace.health.checks)


def test_a_real_cpu_trace_is_sound_with_nothing_to_check(tmp_path: Path) -> None:
    argv = ["profile", "infer", "--weights", str(fixture_file(YOLO9T)), "--device", "cpu"]
    argv += ["--warmup", "0", "--runs", "2", "--imgsz", "64", "--project", str(tmp_path)]
    assert invoke(argv).status == 0
    profile = json.loads((tmp_path / "infer" / "profile.json").read_text())
    assert profile["trace"]["health"] == {"suspect": False, "checks": []}
    assert profile["verdict"]["bound"] != "suspect-trace"


def _events() -> tuple[dict[str, Any], Events, Events]:
    """The A100 trace, its events, and its ProfilerSteps in order."""
    document = json.loads(gzip.decompress(A100.read_bytes()))
    events: Events = document["traceEvents"]
    steps = sorted((e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])  # fmt: skip
    return document, events, steps


def _launched_in(events: Events, step: dict[str, Any]) -> set[int]:
    return {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") in CALLS and step["ts"] <= e["ts"] < step["ts"] + step["dur"]
    }


def _drop_head(events: Events, steps: Events) -> Events:
    """pytorch#192021: a session's first kernel records are lost, their launches kept."""
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    lost = {id(e) for e in kernels[:100]}
    return [e for e in events if id(e) not in lost]


def _thin_a_step(events: Events, steps: Events) -> Events:
    """A fifth of the second step's launches gone with their kernels: fewer kernels, no trace
    of the loss in the calls."""
    launches = sorted(
        (e for e in events if e.get("cat") in CALLS and "Launch" in e.get("name", "")
         and steps[1]["ts"] <= e["ts"] < steps[1]["ts"] + steps[1]["dur"]),
        key=lambda e: e["ts"],
    )  # fmt: skip
    gone = {e["args"]["correlation"] for e in launches[: len(launches) // 5]}
    kinds = (*GPU_RECORDS, *CALLS)
    return [
        e for e in events
        if not (e.get("cat") in kinds and e.get("args", {}).get("correlation") in gone)
    ]  # fmt: skip


def _shifted(by_us: float) -> Callable[[Events, Events], Events]:
    def shift(events: Events, steps: Events) -> Events:
        moved = copy.deepcopy(events)
        third = _launched_in(events, steps[2])
        for e in moved:
            if e.get("cat") in GPU_RECORDS and e.get("args", {}).get("correlation") in third:
                e["ts"] += by_us
        return moved

    return shift


def _zeroed(field: str) -> Callable[[Events, Events], Events]:
    def zero(events: Events, steps: Events) -> Events:
        moved = copy.deepcopy(events)
        kernels = [e for e in moved if e.get("cat") == "kernel"]
        for e in kernels[-100:]:
            e[field] = 0
        return moved

    return zero


PLANTED = {
    "head records dropped": (_drop_head, {"launches_without_gpu_activity", "kernels_per_step"}),
    "a step with missing kernels": (_thin_a_step, {"kernels_per_step"}),
    "activity before its launch": (_shifted(-50_000.0), {"starts_before_launch"}),
    "activity far after the window": (_shifted(5_000_000.0), {"activity_outside_window"}),
    "zero durations": (_zeroed("dur"), {"zero_duration_kernels"}),
}


@pytest.mark.parametrize("planted", list(PLANTED), ids=list(PLANTED))
def test_a_planted_corruption_fails_its_check_and_withholds_the_verdict(
    planted: str, tmp_path: Path
) -> None:
    corrupt, expected = PLANTED[planted]
    document, events, steps = _events()
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document | {"traceEvents": corrupt(events, steps)}))
    trace = analyse_trace(path, workers=1)
    assert trace.health is not None and trace.health.suspect
    assert {c.name for c in trace.health.failed()} == expected
    summary = invoke(["profile", "summary", str(path)])
    assert summary.status == 0
    lines = summary.stdout.splitlines()
    for name in sorted(expected):
        assert [x for x in lines if x.startswith(f"trace    SUSPECT: {name} ")], lines
    names = ", ".join(c.name for c in trace.health.failed())
    verdict = f">> SUSPECT-TRACE: the trace failed its health check ({names}): no bottleneck "
    assert f"{verdict}is named from it" in lines
    as_json = invoke(["profile", "summary", str(path), "--json"]).json()
    assert isinstance(as_json, dict) and as_json["bound"] == "suspect-trace"
    failed = [c["name"] for c in as_json["trace_health"]["checks"] if not c["ok"]]
    assert set(failed) == expected


def _trials(tmp_path: Path, name: str, values: list[float], suspect: int | None) -> Path:
    profile = repeat_profile(values)
    trials = [
        msgspec.structs.replace(t, bound="suspect-trace") if t.index == suspect else t
        for t in profile.trials
    ]
    path = tmp_path / f"{name}.json"
    save(msgspec.structs.replace(profile, trials=trials), path)
    return path


def test_compare_refuses_a_significance_call_over_a_suspect_trial(tmp_path: Path) -> None:
    before = _trials(tmp_path, "before", [10.0, 10.2, 9.9], suspect=None)
    after = _trials(tmp_path, "after", [12.0, 12.1, 11.9], suspect=1)
    refused = invoke(["profile", "compare", str(before), str(after)])
    assert (refused.status, refused.stdout) == (2, "")
    assert refused.stderr == (
        "no significance call over a suspect trace: the after profile's trial 2 failed its "
        "health check (measure it again, or pass --allow-suspect to call it anyway; its "
        "summary names the check)\n"
    )
    allowed = invoke(["profile", "compare", str(before), str(after), "--allow-suspect"])
    assert allowed.status == 0 and "img/s" in allowed.stdout
    single = _trials(tmp_path, "single", [12.0], suspect=0)  # no call made: nothing refused
    assert invoke(["profile", "compare", str(before), str(single)]).status == 0


def test_trials_that_launch_different_kernels_make_the_aggregate_suspect() -> None:
    trace = analyse_trace(A100, workers=1)
    assert isinstance(trace, TraceAnalysis)

    def trial(kernels: float) -> Any:
        profile = repeat_profile([10.0], trace=trace)
        metrics = profile.metrics | {"kernels_per_step": kernels}
        return msgspec.structs.replace(profile, metrics=metrics, trials=[])

    sound = aggregate([trial(900.0), trial(900.0), trial(900.0)])
    assert sound.trace is not None and sound.trace.health is not None
    assert not sound.trace.health.suspect and sound.metrics["bound"] != "suspect-trace"
    odd = aggregate([trial(900.0), trial(900.0), trial(700.0)])
    assert odd.trace is not None and odd.trace.health is not None
    assert [c.name for c in odd.trace.health.failed()] == ["kernels_across_trials"]
    assert odd.verdict is not None and odd.verdict.bound == "suspect-trace"
    assert odd.metrics["bound"] == "suspect-trace"
    assert isinstance(odd.trials[0], Trial)


def test_a_sweep_never_recommends_a_suspect_point_and_says_so() -> None:
    def point(ips: float, bound: str) -> SweepRow:
        metrics = HeadlineMetrics(img_per_s=ips, step_ms=10.0, bound=bound)
        return SweepRow(status="ok", batch=1, imgsz=64, amp=True, metrics=metrics)

    points = {"fast": point(100.0, "suspect-trace"), "slow": point(50.0, "compute")}
    record = sweep_record("/s", points)
    assert record.recommended == {"64": "slow"}
    assert (
        "suspect: 1 point whose trace failed the health check, never recommended; `summary` of "
        "a point's profile names the check"
    ) in sweep_lines(record)


def test_a_sweep_never_recommends_a_point_whose_mode_disagrees() -> None:
    def point(ips: float, agrees: bool | None) -> SweepRow:
        metrics = HeadlineMetrics(img_per_s=ips, step_ms=10.0, bound="compute", agrees=agrees)
        return SweepRow(status="ok", batch=1, imgsz=64, amp=True, metrics=metrics)

    record = sweep_record("/s", {"ort": point(100.0, False), "eager": point(50.0, None)})
    assert record.recommended == {"64": "eager"}
    assert (
        "disagrees: 1 point whose mode disagrees with eager fp32, never recommended"
        in sweep_lines(record)
    )
