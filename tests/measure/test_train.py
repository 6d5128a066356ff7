"""The training collector on CPU: the synthetic set, batch 2, warmup 1, steps 4, no workers."""

from __future__ import annotations

import dataclasses
import functools
import re
import warnings
from pathlib import Path

import jsonschema
import pytest

from libreyolo.boundary.output import Output
from libreyolo.cli.main import main
from libreyolo.config.schema import ExecConfig, ProfileConfig
from libreyolo.document.codec import to_builtins
from libreyolo.document.model import Profile
from libreyolo.errors import NoProfileError, ProfileError, UsageError
from libreyolo.measure import loop
from libreyolo.measure import threads as threads_module
from libreyolo.measure.from_config import Note
from libreyolo.measure.host import HostSampler
from libreyolo.measure.train import capped_workers, profile_training
from libreyolo.measure.window import plan_window
from libreyolo.workload.data import synthetic
from libreyolo.workload.data.dataset_config import DATASETS_ENV
from libreyolo.workload.data.synthetic import make_synthetic
from tests.configs import configured
from tests.conftest import invoke

PHASES = {"dataload", "to_device", "forward", "backward", "optimizer"}


# The flat names the tests below change, as config keys.
KEYS = {"workers": "dataset.workers", "steps": "window.steps", "warmup": "window.warmup"}


def _settings(checkpoint: Path, data: Path, project: Path, **changes: object) -> ProfileConfig:
    base = {
        "dataset.name_or_path": str(data),
        "model.weights": str(checkpoint),
        "model.size": "t",
        "batch": 2,
        "imgsz": 128,
        "dataset.workers": 0,
        "window.steps": 4,
        "window.warmup": 1,
        "device.name": "cpu",
        "project": str(project),
    }
    return configured("run", base | {KEYS.get(k, k): v for k, v in changes.items()})


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_synthetic(tmp_path_factory.mktemp("data"), num_train=12, num_val=2, imgsz=128)


@pytest.fixture(scope="module")
def measured(
    checkpoint: Path, data: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Profile, Path]:
    return profile_training(_settings(checkpoint, data, tmp_path_factory.mktemp("project")))


def test_training_profile_is_complete(
    measured: tuple[Profile, Path], schema_validator: jsonschema.Draft202012Validator
) -> None:
    profile, path = measured
    assert path.parent.name == "run" and path.is_file()
    schema_validator.validate(to_builtins(profile))
    assert profile.kind == "train" and profile.run.mode == "training"
    assert (profile.window.num_unsynced, profile.window.num_synced) == (2, 2)
    assert profile.window.num_bare == 2 and len(profile.samples.bare_ms) == 2
    steps = profile.samples.steps
    assert [s.synced for s in steps] == [False, False, True, True]
    assert all(s.dataload_ms is not None for s in steps if not s.synced)
    assert all(set(s.phase_ms) == PHASES for s in steps if s.synced)
    assert profile.run.amp is False and profile.run.config["amp"] is True  # asked, no effect
    assert (profile.run.family, profile.run.random_init) == ("yolo9", False)
    assert (profile.run.max_labels, profile.run.variants) == (300, [])  # 1.6.0's work per step
    # The speed-ups it did not use, each timed after the window on the part it changes.
    trimmed, assigner, layout, foreach = profile.variant_trials
    assert (trimmed.variant, trimmed.repeats) == ("trimmed_targets", 3)
    assert trimmed.part == "the loss, forward and backward, over 300 target rows per image"
    assert (assigner.variant, assigner.repeats) == ("vectorised_assigner", 3)
    assert assigner.part == "the loss, forward and backward, with 1.6.0's assigner arithmetic"
    assert (layout.variant, layout.repeats) == ("channels_last", 3)
    assert layout.part == "the forward and backward with the loss, NCHW as 1.6.0 runs them"
    assert profile.execution is not None and profile.execution.channels_last is False
    assert (foreach.variant, foreach.repeats) == ("foreach_updates", 3)
    assert foreach.part == "the weight update (SGD step and EMA, as 1.6.0 runs them)"
    step_ms = profile.metrics["step_ms"]
    assert isinstance(step_ms, float) and profile.verdict is not None
    for trial in (trimmed, assigner, layout, foreach):
        assert trial.as_run_ms > 0 and trial.variant_ms > 0
        named = [lever for lever in profile.verdict.levers if f"--variant {trial.variant}" in lever]
        saved_ms = trial.as_run_ms - trial.variant_ms
        worth_naming = 0 < saved_ms < step_ms and step_ms / (step_ms - saved_ms) >= 1.02
        assert len(named) == (1 if worth_naming else 0)
    assert (profile.run.num_images, profile.run.batches_per_epoch) == (12, 6)
    yaml = Path(profile.run.config["dataset"]["name_or_path"])  # the set's own YAML file
    assert profile.run.dataset_yaml is not None and Path(profile.run.dataset_yaml) == yaml
    assert profile.metrics["step_ms"] is not None
    # the training window's own peak RSS (the workers' not included), a real number
    assert profile.host_memory is not None and profile.host_memory.peak_rss_bytes
    assert profile.metrics["peak_rss_mb"] == round(profile.host_memory.peak_rss_bytes / 1e6, 1)
    # 6 batches per epoch: warmup takes one, and the 4 measured + 2 calibration steps need 6,
    # so the window starts a fresh epoch (noted).
    assert any("new epoch" in note for note in profile.notes)
    trace = profile.trace
    assert trace is not None and trace.num_steps == 2
    phases = {p.name: p for p in trace.phases}
    assert set(phases) >= PHASES
    assert all(phases[name].wall_ms_per_step is not None for name in PHASES)
    assert (path.parent / "profile_trace.json").is_file()
    assert main(["profile", "summary", str(path)]) == 0


def test_dataset_too_small_names_the_numbers(checkpoint: Path, data: Path, tmp_path: Path) -> None:
    with pytest.raises(NoProfileError) as info:
        profile_training(_settings(checkpoint, data, tmp_path, batch=4, steps=4, warmup=1))
    message = info.value.message
    assert "12 images" in message and "3 batches of 4" in message and "need 4 batches" in message
    assert "4 measured steps" in message and "calibration" not in message
    assert info.value.hint is not None
    for way_out in ("larger dataset", "fewer --steps", "smaller --batch"):
        assert way_out in info.value.hint
    assert not (tmp_path / "run").exists()


linux_schedstat = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir(), reason="needs Linux /proc schedstat"
)


@linux_schedstat
def test_every_measured_step_is_host_sampled(measured: tuple[Profile, Path]) -> None:
    profile, _ = measured
    host = profile.host
    assert host is not None and host.measurable and host.num_workers == 0
    assert all(s.cpu_ms is not None and s.cpu_ms > 0 for s in profile.samples.steps)
    assert host.cpu_ms == pytest.approx(sum(s.cpu_ms or 0.0 for s in profile.samples.steps))
    assert isinstance(profile.metrics["contended"], bool)


@linux_schedstat
def test_loader_workers_are_sampled_beside_the_process(
    checkpoint: Path, data: Path, tmp_path: Path
) -> None:
    profile, _ = profile_training(_settings(checkpoint, data, tmp_path, workers=2))
    host = profile.host
    assert host is not None and host.num_workers == 2
    assert host.worker_cpu_ms is not None and host.worker_cpu_ms > 0
    assert host.cpu_ms is not None and host.cpu_ms > host.worker_cpu_ms


def test_without_schedstat_contention_is_not_measurable(
    checkpoint: Path, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_proc = tmp_path / "no_proc"
    no_proc.mkdir()
    monkeypatch.setattr(loop, "HostSampler", functools.partial(HostSampler, proc=str(no_proc)))
    profile, path = profile_training(_settings(checkpoint, data, tmp_path / "p"))
    assert profile.host is not None and profile.host.measurable is False
    assert all(s.cpu_ms is None and s.cpu_wait_ms is None for s in profile.samples.steps)
    assert profile.metrics["contended"] is None and profile.metrics["cpu_wait_frac"] is None
    out = tmp_path / "out.txt"
    with out.open("w", encoding="utf-8") as stream:
        assert main(["profile", "summary", str(path)], output=Output(stream, stream)) == 0
    text = out.read_text(encoding="utf-8")
    assert "host     contention not measurable: this platform has no per-thread schedstat" in text


@pytest.mark.parametrize(
    ("workers", "warmup", "steps", "capped"),
    [
        (
            999,
            1,
            2,
            (
                4,
                "--workers 999 capped to 4: the run loads 4 batches "
                "(1 warmup + 2 measured + 1 calibration)",
            ),
        ),
        (4, 1, 2, (4, None)),  # one worker per batch: nothing to cap
        (0, 1, 2, (0, None)),
    ],
)
def test_workers_are_capped_to_the_batches_the_run_loads(
    workers: int, warmup: int, steps: int, capped: tuple[int, str | None]
) -> None:
    assert capped_workers(workers, plan_window(warmup, steps, measured_flag="--steps")) == capped


def test_a_run_without_calibration_steps_names_only_what_it_loads() -> None:
    plan = dataclasses.replace(plan_window(0, 2, measured_flag="--steps"), num_bare=0)
    assert capped_workers(8, plan) == (
        2,
        "--workers 8 capped to 2: the run loads 2 batches (0 warmup + 2 measured)",
    )


@linux_schedstat
def test_the_profile_records_the_workers_that_ran(
    checkpoint: Path, data: Path, tmp_path: Path
) -> None:
    line = (
        "--workers 6 capped to 3: the run loads 3 batches (0 warmup + 2 measured + 1 calibration)"
    )
    with pytest.warns(Note, match=re.escape(line)):
        profile, _ = profile_training(
            _settings(checkpoint, data, tmp_path, workers=6, warmup=0, steps=2)
        )
    assert profile.host is not None and profile.host.num_workers == 3
    assert profile.run.num_workers == 3 and profile.run.config["dataset"]["workers"] == 6
    assert line in profile.notes


def test_a_synthetic_window_too_large_is_refused_before_anything_is_drawn(
    checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def drew(*_args: object) -> None:
        raise AssertionError("drew images")

    monkeypatch.setenv(DATASETS_ENV, str(tmp_path / "datasets"))
    monkeypatch.setattr(synthetic, "_write_split", drew)
    argv = ["profile", "run", "synthetic", "--weights", str(checkpoint), "--device", "cpu"]
    result = invoke([*argv, "--batch", "100000", "--steps", "2", "--project", str(tmp_path / "p")])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        "the synthetic dataset holds at most 4096 images, but 2 measured steps of --batch "
        "100000 need 200000 in one epoch (lower --batch or --steps)"
    )
    assert not (tmp_path / "datasets").exists() and not (tmp_path / "p" / "run").exists()


class _Stop(ProfileError):
    """Ends a run once the dataset is asked for."""


def test_drawing_the_synthetic_set_is_announced_once_and_a_cached_one_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def stop(*_args: object, **_kwargs: object) -> None:
        raise _Stop("stop")

    root = tmp_path / "datasets"
    monkeypatch.setenv(DATASETS_ENV, str(root))
    monkeypatch.setattr("libreyolo.workload.data.dataset_config.resolve_dataset", stop)
    settings = configured(
        "run", {"batch": 4, "window.steps": 4, "window.warmup": 1, "device.name": "cpu"}
    )
    folder = root / "synthetic-v1-train64-val16-320px-seed0"
    line = f"drawing the synthetic dataset once: 64 train images into {folder}"
    with pytest.warns(Note, match=re.escape(line)), pytest.raises(_Stop):
        profile_training(settings)
    make_synthetic(root, num_train=64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", Note)
        with pytest.raises(_Stop):
            profile_training(settings)


def test_a_config_of_the_other_mode_is_refused_before_anything_loads(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="measures mode run; the config says infer"):
        profile_training(configured("infer", {"device.name": "cpu", "project": str(tmp_path)}))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"variants": ["bogus"]}, "unknown variant 'bogus'"),
        ({"max_labels": 0}, "--max-labels must be 1 or more"),
        ({"max_labels": 100, "variants": ["trimmed_targets"]}, "most crowded image"),
    ],
)
def test_a_bad_training_option_is_refused_before_a_profile_is_written(
    checkpoint: Path, data: Path, tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError) as info:
        profile_training(_settings(checkpoint, data, tmp_path, **changes))
    assert message in info.value.message + (info.value.hint or "")
    assert not (tmp_path / "run" / "profile.json").exists()


def test_the_variants_are_recorded(checkpoint: Path, data: Path, tmp_path: Path) -> None:
    variants = ["trimmed_targets", "vectorised_assigner", "foreach_updates", "channels_last"]
    profile, _ = profile_training(
        _settings(checkpoint, data, tmp_path, variants=variants, trace=False)
    )
    assert (profile.run.max_labels, profile.run.variants) == (None, sorted(variants))
    assert profile.variant_trials == []  # nothing left to try
    assert profile.execution is not None and profile.execution.channels_last is True


def test_channels_last_flag_is_the_variant(checkpoint: Path, data: Path, tmp_path: Path) -> None:
    settings = _settings(checkpoint, data, tmp_path, trace=False)
    settings = dataclasses.replace(settings, exec=ExecConfig(channels_last=True))
    profile, _ = profile_training(settings)
    assert profile.run.variants == ["channels_last"]
    assert profile.execution is not None and profile.execution.channels_last is True
    assert "channels_last" not in {t.variant for t in profile.variant_trials}


def test_without_threads_training_runs_with_1_6_0s_count_and_says_so(
    checkpoint: Path,
    data: Path,
    tmp_path: Path,
    two_threads: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads_module, "usable_cpus", lambda: 1)  # as under `taskset -c 0`
    profile, _ = profile_training(_settings(checkpoint, data, tmp_path, trace=False))
    assert profile.environment is not None and profile.environment.num_threads == 1
    assert profile.notes[0] == (
        "CPU threads lowered from torch's 2 to 1, the CPUs this process may use, as libreyolo "
        "1.6.0's trainer does (--threads N to choose)"
    )
    assert torch.get_num_threads() == 2  # the caller's count, back
    chosen, _ = profile_training(_settings(checkpoint, data, tmp_path, threads=2, trace=False))
    assert chosen.environment is not None and chosen.environment.num_threads == 2
    assert not any("CPU threads lowered" in note for note in chosen.notes)


@pytest.mark.parametrize("flags", [["--variant", "bogus"], ["--max-labels", "0"]])
def test_bad_training_flags_exit_2(flags: list[str], tmp_path: Path) -> None:
    result = invoke(["profile", "run", "synthetic", "--device", "cpu",
                     "--project", str(tmp_path), *flags])  # fmt: skip
    assert result.status == 2 and result.stdout == ""
    assert not any(tmp_path.iterdir())
