"""Training on two CPU ranks, end to end: the world profile and its readers, a planted
straggler named with its rank and cause (and a balanced control that names none), a rank
killed mid-run (exit 3, the rank named, the previous set intact, no process left), and the
same world under torchrun."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import invoke
from tests.quiet import quietly
from tests.truth.scenarios import _noise_jpeg

pytestmark = pytest.mark.slow

WORLD = ["--device", "cpu", "--nproc", "2", "--batch", "4", "--imgsz", "128"]
WINDOW = ["--steps", "6", "--warmup", "2", "--workers", "0"]
KILL_AFTER_S = 8.0  # rank 1 is in its window by then: a 40-step run takes ~30 s here
LONG_WINDOW = ["--steps", "40", "--warmup", "2", "--workers", "0"]
RUN_TIMEOUT_S = 240.0


def _run(project: Path, data: str = "synthetic", *extra: str) -> Any:
    return invoke(["profile", "run", data, *WORLD, *WINDOW, "--project", str(project), *extra])


def _world_starved(project: Path) -> str | None:
    """Which rank's window was starved for a CPU, or None (the test's asserts then speak)."""
    path = project / "run" / "profile.json"
    if not path.is_file():
        return None
    world = json.loads(path.read_text())["world"]
    busy = [str(r["rank"]) for r in world["ranks"] if r["contended"]]
    return f"rank {', '.join(busy)} contended" if busy else None


def test_two_cpu_ranks_write_a_world_profile_that_every_reader_reads(tmp_path: Path) -> None:
    project = tmp_path / "project"
    result = _run(project)
    assert result.status == 0, result.stderr
    run = project / "run"
    assert sorted(p.name for p in run.iterdir()) == [
        ".libreyolo-profile",
        "profile.json",
        "rank0",
        "rank1",
    ]
    for rank in (0, 1):
        assert sorted(p.name for p in (run / f"rank{rank}").iterdir()) == [
            "profile.json",
            "profile_trace.json",
        ]
        own = json.loads((run / f"rank{rank}" / "profile.json").read_text())
        assert own["world"] is None and own["run"]["batch"] == 2  # 4 split over 2 ranks
        assert own["metrics"]["comm_ms"] > 0  # gloo's all-reduce, on its own thread
    world = json.loads((run / "profile.json").read_text())
    assert world["world"]["world_size"] == 2 and world["world"]["backend"] == "gloo"
    assert world["world"]["launcher"] == "spawn" and world["world"]["global_batch"] == 4
    assert [r["profile"] for r in world["world"]["ranks"]] == [
        "rank0/profile.json",
        "rank1/profile.json",
    ]
    pids = [r["pid"] for r in world["world"]["ranks"]]
    assert len(set(pids)) == 2 and os.getpid() not in pids
    assert world["artifacts"]["trace"] == "rank0/profile_trace.json"
    assert any(note.startswith("rank 0 of 2: DDP") for note in world["notes"])

    path = str(run / "profile.json")
    summary = invoke(["profile", "summary", path])
    assert summary.status == 0, summary.stderr
    lines = summary.stdout.splitlines()
    assert lines[1].startswith("world    2 ranks (gloo, spawn)  |  global batch 4 = 2 per rank")
    assert lines[2].startswith("rank 0   cpu") and lines[3].startswith("rank 1   cpu")
    assert lines[4].startswith("skew     own work (step less exposed collective wait) differs")
    phases = invoke(["profile", "phases", path])
    assert phases.status == 0 and "comm: " in phases.stdout
    skew = invoke(["profile", "get", path, "rank_skew_pct"])
    assert skew.status == 0 and float(skew.stdout) >= 0
    kernels = invoke(["profile", "kernels", path, "--rank", "1", "--json"])
    assert kernels.status == 0, kernels.stderr
    assert json.loads(kernels.stdout)["trace"] == str(run / "rank1" / "profile.json")
    report = invoke(["profile", "report", path, "-o", str(tmp_path / "report.html")])
    assert report.status == 0, report.stderr
    page = (tmp_path / "report.html").read_text()
    assert 'id="ranks"' in page and page.count(">rank ") >= 2


def _noise_png(path: Path, seed: int) -> None:
    from PIL import Image

    _noise_jpeg(path.with_suffix(".jpg"), 1600, 1200, seed=seed)
    with Image.open(path.with_suffix(".jpg")) as image:
        image.save(path)
    path.with_suffix(".jpg").unlink()


def _straggler_dataset(root: Path, *, slow_rank: int | None) -> Path:
    """40 images, one box each: those DistributedSampler hands rank `slow_rank` (seed 0, 2
    ranks, epoch 0) are 1600 x 1200 PNGs (~50 ms each to decode here; a JPEG would be decoded
    at a reduced size); every other one is a 96 px JPEG. None: all small (the balanced
    control)."""
    import torch

    num_images = 40
    order = torch.randperm(num_images, generator=torch.Generator().manual_seed(0)).tolist()
    slow = set(order[slow_rank::2]) if slow_rank is not None else set()
    images, labels = root / "images" / "train", root / "labels" / "train"
    images.mkdir(parents=True)
    labels.mkdir(parents=True)
    for i in range(num_images):
        if i in slow:
            _noise_png(images / f"{i:03d}.png", seed=i)
        else:
            _noise_jpeg(images / f"{i:03d}.jpg", 96, 72, seed=i)
        (labels / f"{i:03d}.txt").write_text("0 0.5 0.5 0.4 0.3\n")
    yaml_path = root / "data.yaml"
    yaml_path.write_text(f"path: {root}\ntrain: images/train\nval: images/train\nnames:\n  0: x\n")
    return yaml_path


@pytest.mark.parametrize("slow_rank", [1, None], ids=["rank 1 slow", "balanced"])
def test_a_planted_straggler_is_named_with_its_rank_and_cause(
    slow_rank: int | None, tmp_path: Path
) -> None:
    data = _straggler_dataset(tmp_path / "data", slow_rank=slow_rank)
    project = tmp_path / "project"
    # no mosaic: a sample decodes its own image only, so rank 0 never draws a big one
    result = quietly(
        lambda: _run(project, str(data), "--mosaic", "0"),
        lambda _: _world_starved(project),
    )
    assert result.status == 0, result.stderr
    world = json.loads((project / "run" / "profile.json").read_text())
    metrics, verdict = world["metrics"], world["verdict"]
    if slow_rank is None:
        assert metrics["straggler_rank"] is None, (metrics["rank_skew_pct"], world["world"])
        assert verdict["bound"] != "straggler"
        return
    assert metrics["straggler_rank"] == 1, (metrics["rank_skew_pct"], world["world"])
    assert metrics["straggler_cause"] == "dataload"
    assert verdict["bound"] == "straggler"
    assert verdict["why"].startswith("rank 1's own work (its step less its collective wait) is")
    assert "its dataload takes" in verdict["why"]


def _rank_pid(rank: int, deadline: float) -> int | None:
    """The pid of the process named `libreyolo-rank<rank>` (prctl), once it exists."""
    name = f"libreyolo-rank{rank}"
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if (entry / "comm").read_text().strip() == name:
                        return int(entry.name)
                except OSError:
                    continue
        time.sleep(0.1)
    return None


def _ranks_alive() -> list[str]:
    alive = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                comm = (entry / "comm").read_text().strip()
            except OSError:
                continue
            if comm.startswith("libreyolo-rank") and (entry / "stat").read_text().split()[2] != "Z":
                alive.append(f"{entry.name} {comm}")
    return alive


def test_killing_a_rank_fails_the_run_naming_it_and_keeps_the_previous_set(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    one = ["--device", "cpu", "--batch", "2", "--imgsz", "64", "--steps", "2", "--warmup", "0"]
    first = invoke(
        ["profile", "run", "synthetic", *one, "--workers", "0", "--project", str(project)]
    )
    assert first.status == 0, first.stderr
    before = (project / "run" / "profile.json").read_bytes()
    assert _ranks_alive() == []
    argv = [sys.executable, "-m", "libreyolo", "profile", "run", "synthetic", *WORLD, *LONG_WINDOW]
    child = subprocess.Popen(
        [*argv, "--project", str(project)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        pid = _rank_pid(1, time.monotonic() + 60)
        assert pid is not None, "rank 1 never started"
        time.sleep(KILL_AFTER_S)
        os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()
        out, err = child.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 3, err
    assert time.monotonic() - killed_at < 30  # the others are stopped, not waited out
    assert out == ""
    line = [x for x in err.splitlines() if "rank 1 of 2" in x]
    assert line == [
        "rank 1 of 2: its process exited -9 (signal SIGKILL) before it finished (run it again; "
        "if the kernel's OOM killer ended it (dmesg says), lower --batch)"
    ], err
    assert (project / "run" / "profile.json").read_bytes() == before
    assert sorted(p.name for p in (project / "run").iterdir()) == [
        ".libreyolo-profile",
        "profile.json",
        "profile_trace.json",
    ]
    assert [p.name for p in project.iterdir() if p.name.startswith(".run.partial")] == []
    deadline = time.monotonic() + 10
    while _ranks_alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _ranks_alive() == []


def test_torchrun_gives_the_same_world_profile(tmp_path: Path) -> None:
    project = tmp_path / "project"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]
    argv = [*torchrun, "-m", "libreyolo", "profile", "run", "synthetic"]
    argv += ["--device", "cpu", "--batch", "4", "--imgsz", "128", *WINDOW]
    done = subprocess.run(
        [*argv, "--project", str(project)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("profile: ") == 1  # rank 0 prints the world's; rank 1 nothing
    world = json.loads((project / "run" / "profile.json").read_text())["world"]
    assert world["world_size"] == 2 and world["launcher"] == "torchrun"
    assert world["global_batch"] == 4 and world["batch_per_rank"] == 2
    for rank in (0, 1):
        assert (project / "run" / f"rank{rank}" / "profile_trace.json").is_file()


def test_a_sweep_point_on_two_ranks_measures_its_world(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    words = ["mode=run", "device=cpu", "device.nproc=2", "batch=4", "imgsz=64"]
    words += ["window.steps=2", "window.warmup=1", "dataset.workers=0"]
    words += [f"hydra.sweep.dir={sweep}", f"sweep.lock_dir={tmp_path / 'locks'}"]
    done = subprocess.run(
        [sys.executable, "-m", "libreyolo.sweep", "-m", *words],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (point,) = [p for p in sweep.iterdir() if (p / "point.json").is_file()]
    run = point / "run"
    assert sorted(p.name for p in run.iterdir() if p.is_dir()) == ["rank0", "rank1"]
    world = json.loads((run / "profile.json").read_text())["world"]
    assert world["world_size"] == 2 and world["global_batch"] == 4
