"""What several ranks are asked for, and what is refused before anything starts (exit 2, one
line, nothing written)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from libreyolo.config.schema import DeviceConfig, ExecConfig, WindowConfig, mode_defaults
from libreyolo.errors import UsageError
from libreyolo.measure.artifacts import is_profile_set
from libreyolo.measure.world import plan_world, rank_config, rank_env
from tests.conftest import invoke


def _run(**changes: object) -> object:
    return dataclasses.replace(mode_defaults("run"), **changes)


def test_one_process_plans_no_world() -> None:
    assert plan_world(_run(device=DeviceConfig(name="cpu"))) is None
    assert plan_world(_run(device=DeviceConfig(name="0"))) is None


def test_cpu_ranks_and_cuda_indices_plan_a_world_with_the_batch_split() -> None:
    cpu = plan_world(_run(device=DeviceConfig(name="cpu", nproc=2), batch=8))
    assert cpu is not None
    assert cpu.devices == ("cpu", "cpu") and cpu.backend == "gloo"
    assert (cpu.world_size, cpu.global_batch, cpu.batch_per_rank) == (2, 8, 4)
    cuda = plan_world(_run(device=DeviceConfig(name="0,1"), batch=8))
    assert cuda is not None
    assert cuda.devices == ("cuda:0", "cuda:1") and cuda.backend == "nccl"
    rank1 = rank_config(_run(device=DeviceConfig(name="0,1"), batch=8), cuda, 1)
    assert rank1.device == DeviceConfig(name="cuda:1", nproc=2) and rank1.batch == 8
    assert rank_env(1, cuda, 29500) == {
        "RANK": "1",
        "LOCAL_RANK": "1",
        "WORLD_SIZE": "2",
        "LOCAL_WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29500",
    }


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"device": DeviceConfig(name="cpu", nproc=2), "batch": 5},
            "--batch 5 does not split over 2 ranks: libreyolo train gives each rank 5 // 2 = 2 "
            "images and leaves the rest out",
        ),
        (
            {"device": DeviceConfig(name="0", nproc=2)},
            "--nproc 2 with --device 0: on CUDA each rank needs a device of its own",
        ),
        (
            {"device": DeviceConfig(name="0,1", nproc=3)},
            "--device 0,1 names 2 devices but --nproc is 3",
        ),
        (
            {"device": DeviceConfig(name="0,0")},
            "--device 0,0: several ranks need distinct CUDA indices",
        ),
        (
            {"device": DeviceConfig(name="cpu,cpu")},
            "--device cpu,cpu: several ranks need distinct CUDA indices",
        ),
        (
            {"device": DeviceConfig(name="cpu", nproc=2), "batch": -1},
            "--batch -1 (AutoBatch) on 2 ranks is not measured yet",
        ),
        (
            {"device": DeviceConfig(name="cpu", nproc=2), "window": WindowConfig(repeat=3)},
            "--repeat on several ranks is not measured yet",
        ),
        (
            {"device": DeviceConfig(name="cpu", nproc=2), "exec": ExecConfig(name="compile")},
            "--exec compile on several ranks is not measured yet",
        ),
        (
            {"device": DeviceConfig(name="cpu", nproc=2), "trainer": "libreyolo"},
            "--trainer measures libreyolo 1.x's trainer in one process",
        ),
        (
            {"device": DeviceConfig(name="cpu", nproc=0)},
            "--nproc must be 1 or more; got 0",
        ),
    ],
)
def test_what_several_ranks_cannot_measure_is_refused(
    changes: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError) as refused:
        plan_world(_run(**changes))
    assert str(refused.value) == message


def test_inference_has_no_ranks() -> None:
    infer = dataclasses.replace(mode_defaults("infer"), device=DeviceConfig(name="cpu", nproc=2))
    with pytest.raises(UsageError, match="`profile infer` measures one process"):
        plan_world(infer)


def _refusal(tmp_path: Path, *words: str) -> list[str]:
    """The stderr lines of a `profile run synthetic WORDS` that must be refused: exit 2, no
    result, nothing written."""
    project = tmp_path / "project"
    result = invoke(["profile", "run", "synthetic", *words, "--project", str(project)])
    assert result.status == 2 and result.stdout == ""
    assert not project.exists()
    return result.stderr.splitlines()


def test_the_cli_refuses_an_uneven_batch_with_one_line_and_writes_nothing(tmp_path: Path) -> None:
    assert _refusal(tmp_path, "--device", "cpu", "--nproc", "2", "--batch", "5") == [
        "--batch 5 does not split over 2 ranks: libreyolo train gives each rank 5 // 2 "
        "= 2 images and leaves the rest out (give a multiple of 2, e.g. --batch 4)"
    ]


def _set(root: Path, *, extra: dict[str, str] | None = None) -> Path:
    folder = root / "run"
    (folder / "rank0").mkdir(parents=True)
    (folder / ".libreyolo-profile").write_text("{}")
    (folder / "profile.json").write_text("{}")
    (folder / "rank0" / "profile.json").write_text("{}")
    (folder / "rank0" / "profile_trace.json").write_text("{}")
    for name, text in (extra or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def test_a_world_set_is_ours_and_a_folder_with_anything_else_is_not(tmp_path: Path) -> None:
    assert is_profile_set(_set(tmp_path / "a"))
    assert not is_profile_set(_set(tmp_path / "b", extra={"rank1/notes.txt": "mine"}))
    assert not is_profile_set(_set(tmp_path / "c", extra={"data/profile.json": "{}"}))
    unmarked = _set(tmp_path / "d")
    (unmarked / ".libreyolo-profile").unlink()
    assert not is_profile_set(unmarked)  # the previous version wrote no rank folders
    linked = _set(tmp_path / "e")
    (linked / "rank1").symlink_to(tmp_path)
    assert not is_profile_set(linked)


def test_gpu_ranks_without_cuda_are_one_line_before_any_rank_starts(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the refusal is for one without")
    assert _refusal(tmp_path, "--device", "0,1", "--batch", "4") == [
        "--device cuda:0 needs CUDA, but torch finds no CUDA device (use --device cpu)"
    ]
