"""The host-memory pre-check: what is available (fake /proc and cgroup files), the real probe on
the smallest model, and a refused batch from `profile infer` and `profile run` (exit 2, one
line, nothing measured)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from libreyolo.errors import WontFitError
from libreyolo.measure import memory_check
from libreyolo.measure.memory_check import (
    check_inference,
    kept_bytes,
    peak_live_bytes,
    read_available_bytes,
)
from libreyolo.workload.api import load_workload_model
from libreyolo.workload.data.synthetic import make_synthetic
from tests.conftest import invoke

GIB = 2**30
MEMINFO = "MemTotal: 24683520 kB\nMemAvailable: 20971520 kB\n"  # 20 GiB available


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="ascii")


def _proc(tmp_path: Path, cgroup: str) -> tuple[str, str]:
    proc, root = tmp_path / "proc", tmp_path / "cgroup"
    _write(proc / "meminfo", MEMINFO)
    _write(proc / "self" / "cgroup", cgroup)
    root.mkdir(exist_ok=True)
    return str(proc), str(root)


def _group(root: str, path: str, limit: str, current: int, inactive_file: int = 0) -> None:
    folder = Path(root, path)
    _write(folder / "memory.max", f"{limit}\n")
    _write(folder / "memory.current", f"{current}\n")
    _write(folder / "memory.stat", f"anon 1\ninactive_file {inactive_file}\n")


def test_available_is_meminfo_when_no_group_limits_it(tmp_path: Path) -> None:
    proc, root = _proc(tmp_path, "0::/app/job\n")
    _group(root, "app/job", "max", GIB)
    assert read_available_bytes(proc, root) == 20 * GIB


def test_the_tightest_group_on_the_way_to_the_root_wins(tmp_path: Path) -> None:
    proc, root = _proc(tmp_path, "4:memory:/elsewhere\n0::/app/job\n")
    _group(root, "app/job", str(8 * GIB), 2 * GIB, inactive_file=GIB)  # 7 GiB left
    _group(root, "app", str(4 * GIB), 3 * GIB)  # 1 GiB left: the parent's limit holds
    assert read_available_bytes(proc, root) == GIB


def test_a_cgroup_v1_host_reads_meminfo_only(tmp_path: Path) -> None:
    proc, root = _proc(tmp_path, "4:memory:/docker/abc\n1:name=systemd:/\n")
    assert read_available_bytes(proc, root) == 20 * GIB


def test_without_proc_nothing_is_known(tmp_path: Path) -> None:
    assert read_available_bytes(str(tmp_path / "no-proc"), str(tmp_path)) is None


@pytest.fixture(scope="module")
def yolo9t(checkpoint: Path) -> torch.nn.Module:
    _, model = load_workload_model(str(checkpoint), "t", torch.device("cpu"), [])
    return model


def test_the_live_set_of_the_real_model_scales_with_the_pixels(yolo9t: torch.nn.Module) -> None:
    at_64 = peak_live_bytes(yolo9t, torch.rand(1, 3, 64, 64))
    at_128 = peak_live_bytes(yolo9t, torch.rand(1, 3, 128, 128))
    assert at_64 > 3 * 64 * 64 * 4  # more than the float input it holds
    assert 3.6 < at_128 / at_64 < 4.4
    assert peak_live_bytes(yolo9t, torch.rand(1, 3, 64, 64)) == at_64  # nothing kept alive


def test_the_training_probe_counts_kept_outputs_and_leaves_the_model_as_it_was(
    yolo9t: torch.nn.Module,
) -> None:
    yolo9t.train()
    try:
        before = {k: v.clone() for k, v in yolo9t.state_dict().items()}
        kept = kept_bytes(yolo9t, torch.rand(1, 3, 64, 64))
        after = yolo9t.state_dict()
    finally:
        yolo9t.eval()
    assert all(torch.equal(before[k], after[k]) for k in before)  # BN statistics restored
    assert kept > peak_live_bytes(yolo9t, torch.rand(1, 3, 64, 64))
    assert all(p.grad is None for p in yolo9t.parameters())


def test_the_default_inference_fits_easily_and_a_tiny_host_refuses_it(
    yolo9t: torch.nn.Module,
) -> None:
    cpu = torch.device("cpu")
    need = check_inference(yolo9t, device=cpu, batch=1, imgsz=640, available=2 * GIB)
    assert 20e6 < need.per_image_bytes < 60e6 and need.total_bytes(1) < 150e6
    with pytest.raises(WontFitError) as info:
        check_inference(yolo9t, device=cpu, batch=4000, imgsz=640, available=int(21.9e9))
    message = f"{info.value.message} ({info.value.hint})"
    pattern = (
        r"--batch 4000 at --imgsz 640 needs about 1\d\d\.\d GB of memory \(\d\d\.\d MB an "
        r"image\); 21\.9 GB are available \(lower --batch to about \d{3} or --imgsz\)"
    )
    assert re.fullmatch(pattern, message), message


def test_on_an_accelerator_the_batch_on_the_device_is_not_the_hosts(
    yolo9t: torch.nn.Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_probe(*_args: object) -> int:
        raise AssertionError("probed the model for a device run")

    monkeypatch.setattr(memory_check, "peak_live_bytes", no_probe)
    need = check_inference(
        yolo9t, device=torch.device("cuda", 0), batch=4000, imgsz=640, available=GIB
    )
    assert need.total_bytes(4000) == 0


def _refused(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 or all(line.startswith(("note:", "warning:")) for line in lines[:-1])
    return lines[-1]


def test_infer_refuses_a_batch_the_host_cannot_hold(
    checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_check, "read_available_bytes", lambda: 100_000_000)
    project = tmp_path / "p"
    argv = ["profile", "infer", "--weights", str(checkpoint), "--device", "cpu", "--batch", "512"]
    argv += ["--imgsz", "64", "--warmup", "1", "--runs", "2", "--no-trace"]
    result = invoke([*argv, "--project", str(project)])
    assert result.status == 3 and result.stdout == ""  # no profile: the run cannot fit here
    line = _refused(result.stderr)
    pattern = (
        r"--batch 512 at --imgsz 64 needs about 0\.\d GB of memory \(0\.\d MB an image\); "
        r"0\.1 GB are available \(lower --batch to about \d\d or --imgsz\)"
    )
    assert re.fullmatch(pattern, line), line
    assert not (project / "infer").exists()


def test_run_refuses_before_any_loader_worker_starts(
    checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_loader(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the loader was built")

    monkeypatch.setattr(memory_check, "read_available_bytes", lambda: 100_000_000)
    monkeypatch.setattr("libreyolo.workload.data.loader.build_loader", no_loader)
    data = make_synthetic(tmp_path / "data", num_train=12, num_val=2, imgsz=128)
    project = tmp_path / "p"
    argv = ["profile", "run", str(data), "--weights", str(checkpoint), "--device", "cpu"]
    argv += ["--batch", "4", "--imgsz", "128", "--workers", "2", "--steps", "2", "--warmup", "0"]
    result = invoke([*argv, "--project", str(project)])
    assert result.status == 3 and result.stdout == "", result.stderr
    line = _refused(result.stderr)
    pattern = (
        r"--batch 4 at --imgsz 128 needs about 0\.\d GB of memory \(\d+\.\d MB an image\); "
        r"0\.1 GB are available \(lower --imgsz or --workers\)"
    )
    assert re.fullmatch(pattern, line), line
    assert not (project / "run").exists()
