"""FLOPs per image against the authors' published figures, a training step's against its
forward, and MFU of a real CPU profile against the GEMM peak it measured.

Known answers: the GFLOPs of the YOLOv9 README (WongKinYiu/yolov9, "Performance" table:
YOLOv9-T/S/M/C at 640: 7.7, 26.4, 76.3, 102.1) and the YOLOX README (Megvii-BaseDetection/YOLOX,
"Benchmark" tables: YOLOX-Nano and -Tiny at 416: 1.08, 6.45; YOLOX-s/m/l/x at 640: 26.8, 73.8,
155.6, 281.9), both 2 FLOPs per multiply-add (thop's MACs doubled), as our counter counts them.
Weights do not change FLOPs, so every model is the random-init fallback of its published name.

The cheapest honest path: a full `profile infer` per size would cost most of a minute on a
2-core CPU (YOLOX-x's forward alone takes seconds), so the smallest four (YOLOv9-t, YOLOX-nano,
YOLOX-tiny, YOLOX-s) go end to end (`profile infer` with the smallest window, then `get
flops_per_image`) and the other six through `count_model_flops` on the model the collector
builds (`load_workload_model`, then the default fusion: the same code path, without the
window). The runs here use one intra-op thread: FLOPs do not depend on threads, and one thread
does not spin against the rest of a shared host (two threads there cost four times the wall).
The YOLOv9-t training profile is the session's (`cpu_train_profile`, measured for the report
tests anyway); YOLOX-s's is measured here.

MFU: the GEMM is the friendliest dense kernel this CPU runs, so a model's FLOP rate stays
below it unless one of the two was starved; a peak measured while another process took the
CPUs reads low and MFU against it high (above 1). Both are flagged (the window's `contended`
metric, the peak's `contended`), and the MFU test measures again, a bounded number of times
(tests/quiet.py), before it fails "host too busy": it never asserts on starved numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from libreyolo.measure.compute import count_model_flops
from libreyolo.measure.infer import FUSE_CHOICES
from libreyolo.workload.api import load_workload_model
from tests.conftest import invoke
from tests.quiet import quietly, read_json, starved

pytestmark = pytest.mark.slow
TOLERANCE = 0.05  # the bar: within 5 % of the published figure
# (family, size) -> (input side, published GFLOPs)
PUBLISHED: dict[tuple[str, str], tuple[int, float]] = {
    ("yolo9", "t"): (640, 7.7),
    ("yolo9", "s"): (640, 26.4),
    ("yolo9", "m"): (640, 76.3),
    ("yolo9", "c"): (640, 102.1),
    ("yolox", "n"): (416, 1.08),
    ("yolox", "t"): (416, 6.45),
    ("yolox", "s"): (640, 26.8),
    ("yolox", "m"): (640, 73.8),
    ("yolox", "l"): (640, 155.6),
    ("yolox", "x"): (640, 281.9),
}
END_TO_END = [("yolo9", "t"), ("yolox", "n"), ("yolox", "t"), ("yolox", "s")]
COUNTED = [key for key in PUBLISHED if key not in END_TO_END]
PREFIX = {"yolo9": "LibreYOLO9", "yolox": "LibreYOLOX"}
ONE_THREAD = ["--threads", "1"]


@pytest.fixture(scope="module", autouse=True)
def random_weights(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No cached weights and no network: every published name falls back to random init."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LIBREYOLO_WEIGHTS_DIR", str(tmp_path_factory.mktemp("weights")))
        patch.setenv("LIBREYOLO_WEIGHTS_URL", "http://127.0.0.1:9/{name}")
        yield


def _weights(family: str, size: str) -> str:
    return f"{PREFIX[family]}{size}.pt"


def _infer_argv(family: str, size: str, project: Path) -> list[str]:
    """The smallest window `infer` takes: no warmup, one latency run (and its one synced)."""
    argv = ["profile", "infer", "--weights", _weights(family, size), "--size", size]
    argv += ["--imgsz", str(PUBLISHED[family, size][0]), "--device", "cpu", *ONE_THREAD]
    return [*argv, "--warmup", "0", "--runs", "1", "--no-trace", "--project", str(project)]


@pytest.fixture(scope="module")
def infer_profile(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Path]:
    """The profile.json of one infer run per size, measured on first use (the YOLOv9-t one
    serves the FLOPs and the MFU tests)."""
    made: dict[tuple[str, str], Path] = {}

    def profile(family: str, size: str) -> Path:
        if (family, size) not in made:
            project = tmp_path_factory.mktemp(f"infer-{family}-{size}")
            result = invoke(_infer_argv(family, size, project))
            assert result.status == 0, result.stderr
            made[family, size] = project / "infer" / "profile.json"
        return made[family, size]

    return profile


def _get(profile: Path, metric: str) -> str:
    result = invoke(["profile", "get", str(profile), metric])
    assert result.status == 0, result.stderr
    return result.stdout.strip()


def _ids(keys: list[tuple[str, str]]) -> list[str]:
    return [f"{family}-{size}" for family, size in keys]


@pytest.mark.parametrize(("family", "size"), END_TO_END, ids=_ids(END_TO_END))
def test_an_infer_profile_counts_the_published_flops(
    family: str, size: str, infer_profile: Callable[[str, str], Path]
) -> None:
    counted = float(_get(infer_profile(family, size), "flops_per_image"))
    assert counted / 1e9 == pytest.approx(PUBLISHED[family, size][1], rel=TOLERANCE)


@pytest.mark.parametrize(("family", "size"), COUNTED, ids=_ids(COUNTED))
def test_the_collectors_model_counts_the_published_flops(family: str, size: str) -> None:
    imgsz, gflops = PUBLISHED[family, size]
    notes: list[str] = []
    workload, model = load_workload_model(
        _weights(family, size), size, torch.device("cpu"), notes, family
    )
    fuse = FUSE_CHOICES["full"]  # the default `--fuse full`, as `profile infer` does
    if fuse in workload.fuse_modes:
        model = workload.fuse(model, fuse)
    flops = count_model_flops(model, batch=1, imgsz=imgsz, training=False, notes=notes)
    assert flops is not None, notes
    assert flops.per_image / 1e9 == pytest.approx(gflops, rel=TOLERANCE)


def _check_training(profile: Path) -> None:
    step = float(_get(profile, "flops_per_image"))
    forward = float(_get(profile, "forward_flops_per_image"))
    backward = float(_get(profile, "backward_flops_per_image"))
    assert backward > 0
    assert step == pytest.approx(forward + backward, abs=1)
    assert 2.5 <= step / forward <= 3.5


def test_a_yolo9t_training_step_counts_about_three_forwards(cpu_train_profile: Path) -> None:
    _check_training(cpu_train_profile)


def test_a_yoloxs_training_step_counts_about_three_forwards(tmp_path: Path) -> None:
    argv = ["profile", "run", "synthetic", "--weights", _weights("yolox", "s"), "--size", "s"]
    argv += ["--device", "cpu", *ONE_THREAD, "--batch", "2", "--imgsz", "64", "--steps", "2"]
    result = invoke([*argv, "--warmup", "0", "--workers", "0", "--project", str(tmp_path)])
    assert result.status == 0, result.stderr
    _check_training(tmp_path / "run" / "profile.json")


def _starved(document: dict[str, Any] | None) -> str | None:
    """Why this profile's MFU cannot be trusted, if it cannot: its window or its peak starved."""
    peaks = ((document or {}).get("compute") or {}).get("peaks") or []
    if any(peak.get("contended") for peak in peaks):
        return "GEMM peak contended"
    return starved(document)


def test_a_cpu_infer_profile_has_mfu_in_zero_one_against_its_measured_peak(
    infer_profile: Callable[[str, str], Path], tmp_path: Path
) -> None:
    profile = infer_profile("yolo9", "t")
    if _starved(read_json(profile)) is not None:  # measure again, quietly, before judging
        profile = tmp_path / "infer" / "profile.json"
        argv = _infer_argv("yolo9", "t", tmp_path)
        result = quietly(lambda: invoke(argv), lambda _: _starved(read_json(profile)))
        assert result.status == 0, result.stderr
    document = read_json(profile)
    assert document is not None
    peaks = document["compute"]["peaks"]
    assert [peak["source"] for peak in peaks] == ["measured"]  # a CPU: no datasheet row
    assert peaks[0]["tflops"] > 0
    assert _get(profile, "peak_source") == "measured"

    mfu = float(_get(profile, "mfu"))
    assert 0 < mfu <= 1
    flops, img_per_s = float(_get(profile, "flops_per_image")), float(_get(profile, "img_per_s"))
    achieved = float(_get(profile, "achieved_tflops"))
    assert achieved == pytest.approx(flops * img_per_s / 1e12, rel=0.01)
    assert mfu == pytest.approx(achieved / peaks[0]["tflops"], rel=0.01)
