"""The inference collector on CPU with a tiny window: a complete, readable profile."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from libreyolo.cli.main import main
from libreyolo.config.schema import ProfileConfig
from libreyolo.document.codec import to_builtins
from libreyolo.document.files import load
from libreyolo.document.model import Profile
from libreyolo.errors import UsageError
from libreyolo.measure.infer import profile_inference
from tests.configs import configured

STAGES = {"preprocess", "forward", "postprocess"}


def _settings(checkpoint: Path, project: Path, **changes: object) -> ProfileConfig:
    base = {
        "model.weights": str(checkpoint),
        "model.size": "t",
        "imgsz": 128,
        "window.warmup": 1,
        "window.runs": 5,
        "device.name": "cpu",
        "project": str(project),
    }
    return configured("infer", base | {KEYS.get(k, k): v for k, v in changes.items()})


KEYS = {"runs": "window.runs", "device": "device.name"}  # the changes below, as config keys


@pytest.fixture(scope="module")
def measured(
    checkpoint: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Profile, Path, list[tuple[str, int, int]]]:
    calls: list[tuple[str, int, int]] = []
    project = tmp_path_factory.mktemp("project")
    settings = _settings(checkpoint, project, half=True)
    profile, path = profile_inference(settings, on_progress=lambda *a: calls.append(a))
    return profile, path, calls


def test_profile_is_written_and_valid(
    measured: tuple[Profile, Path, list[tuple[str, int, int]]],
    schema_validator: jsonschema.Draft202012Validator,
) -> None:
    profile, path, _ = measured
    assert path.name == "profile.json" and path.parent.name == "infer"
    schema_validator.validate(to_builtins(profile))
    on_disk = json.loads(path.read_text(encoding="utf-8"))
    schema_validator.validate(on_disk)
    assert load(str(path)) == profile
    assert not [p for p in path.parent.parent.iterdir() if p.name.startswith(".")]


def test_window_and_samples(measured: tuple[Profile, Path, list[tuple[str, int, int]]]) -> None:
    profile, _, calls = measured
    window = profile.window  # --runs 5: five latency samples, then 2 synced for the stages
    assert (window.num_warmup, window.num_measured) == (1, 7)
    assert (window.num_unsynced, window.num_synced) == (5, 2)
    assert len(profile.samples.latency_ms) == window.num_unsynced
    assert set(profile.samples.stage_ms) == STAGES
    assert all(len(v) == window.num_synced for v in profile.samples.stage_ms.values())
    steps = profile.samples.steps
    assert [s.index for s in steps] == list(range(7))
    assert [s.synced for s in steps] == [False] * 5 + [True] * 2
    assert all(set(s.phase_ms) == STAGES for s in steps if s.synced)
    assert profile.metrics["latency_n"] == 5
    assert profile.metrics["forward_ms"] is not None
    # warmup 1 + 5 latency runs + 2 bare calibration runs (half the runs) + 2 synced runs
    assert (window.num_bare, window.profiler_on) == (2, True)
    assert len(profile.samples.bare_ms) == 2 and min(profile.samples.bare_ms) > 0
    assert isinstance(profile.metrics["profiler_overhead_pct"], float)
    assert calls[-1] == ("measured step", 9, 9)
    assert ("warmup", 1, 1) in calls and ("load weights", 0, 1) in calls


def test_trace_exists_and_is_analysed(
    measured: tuple[Profile, Path, list[tuple[str, int, int]]],
) -> None:
    profile, path, _ = measured
    assert profile.artifacts.trace == "profile_trace.json"
    trace_path = path.parent / "profile_trace.json"
    # The name torch wrote is the staging folder's, gone after the swap: it names the file now.
    assert json.loads(trace_path.read_text("utf-8"))["traceName"] == str(trace_path.resolve())
    trace = profile.trace
    assert trace is not None and not trace.has_gpu
    assert trace.num_steps == profile.window.num_unsynced  # the trace holds every latency run
    phases = {p.name: p for p in trace.phases}
    assert set(phases) >= STAGES
    assert all(phases[name].wall_ms_per_step is not None for name in STAGES)


def test_cpu_run_records_device_truth(
    measured: tuple[Profile, Path, list[tuple[str, int, int]]],
) -> None:
    profile, _, _ = measured
    run, env = profile.run, profile.environment
    assert run.mode == "inference" and run.device == "cpu" and run.batch == 1
    assert run.imgsz == 128 and run.amp is False
    assert run.config["half"] is True and run.config["window"]["runs"] == 5
    assert run.random_init is False and run.fused is True and run.family == "yolo9"
    assert run.num_images == 1 and run.config["model"]["fuse"] == "full"
    assert not {"amp_effective", "random_init", "resolved", "device_resolved"} & set(run.config)
    assert any("--half has no effect" in note for note in profile.notes)
    assert "notes" not in run.config  # one home for the notes: the profile's own list
    assert env.num_threads and env.torch and env.python and env.num_cpus
    assert profile.verdict is not None


def test_readers_work_on_it(measured: tuple[Profile, Path, list[tuple[str, int, int]]]) -> None:
    _, path, _ = measured
    for reader in ("summary", "phases", "get"):
        assert main(["profile", reader, str(path)]) == 0


def test_no_trace_run(checkpoint: Path, tmp_path: Path) -> None:
    profile, path = profile_inference(_settings(checkpoint, tmp_path, trace=False, runs=2))
    assert profile.trace is None and profile.artifacts.trace is None
    assert not (path.parent / "profile_trace.json").exists()
    assert len(profile.samples.latency_ms) == 2 and profile.metrics["latency_p50_ms"] is not None


def test_device_zero_without_cuda_is_usage_error(checkpoint: Path, tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(UsageError, match="needs CUDA"):
        profile_inference(_settings(checkpoint, tmp_path, device="0"))
    assert not (tmp_path / "infer").exists()


def test_bad_amp_dtype_fails_before_loading(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="amp_dtype must be one of"):
        profile_inference(_settings(tmp_path / "missing.pt", tmp_path, amp_dtype="int8"))


def test_interrupted_run_leaves_previous_profile(checkpoint: Path, tmp_path: Path) -> None:
    _, path = profile_inference(_settings(checkpoint, tmp_path, runs=2, trace=False))
    before = path.read_bytes()

    def interrupt(stage: str, done: int, total: int) -> None:
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        profile_inference(_settings(checkpoint, tmp_path, runs=4), on_progress=interrupt)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["infer"]  # no staging left behind


def test_a_config_of_the_other_mode_is_refused_before_anything_loads(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="measures mode infer; the config says run"):
        profile_inference(configured("run", {"device.name": "cpu", "project": str(tmp_path)}))
    assert list(tmp_path.iterdir()) == []
