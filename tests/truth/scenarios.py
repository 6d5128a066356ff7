"""Planted bottlenecks: inputs made so that the verdict is known before anything is measured.

Each scenario is an experiment file in `tests/truth/conf/` plus the inputs it needs (a dataset of
large JPEGs, a huge source image, a checkpoint whose class scores are all high), built here from
nothing. `run_scenario` measures it end to end through the CLI and `check` returns what is wrong
with the verdict, its evidence and its reason (empty when right). Used by tests/truth and by
scripts/truth_report.py, which prints the same checks as a table.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONF_DIR = Path(__file__).resolve().parent / "conf"
DATALOAD_SHARE_MIN = 0.20  # the bar for "input-bound"
COMPUTE_DATALOAD_SHARE_MAX = 0.10  # "small": the loader hides behind the step


@contextmanager
def one_thread() -> Iterator[None]:
    """One intra-op thread for checks that compare runs with each other. On a shared 2-core
    machine two OpenMP threads run either in parallel or stalled, run by run (seen: trials of one
    config at 49 and at 66 img/s), a machine state no statistic over 3 trials can see through;
    one thread measured 48-50 img/s every time. The planted verdicts need no such care."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _noise_jpeg(path: Path, width: int, height: int, seed: int) -> None:
    """A JPEG of smooth noise: large on disk and slow to decode, like a camera photo."""
    from PIL import Image

    rng = random.Random(seed)
    small = Image.frombytes("RGB", (64, 48), bytes(rng.randrange(256) for _ in range(64 * 48 * 3)))
    image = small.resize((width, height), Image.Resampling.BICUBIC)
    image.save(path, quality=95)


def big_jpeg_dataset(root: Path, *, num_images: int = 12, side: int = 2400) -> Path:
    """A YOLO-format dataset of `num_images` JPEGs of side x 3/4 side, one box each (built once
    per folder)."""
    yaml_path = root / "big.yaml"
    if yaml_path.is_file():
        return yaml_path
    images, labels = root / "images" / "train", root / "labels" / "train"
    images.mkdir(parents=True, exist_ok=True)
    labels.mkdir(parents=True, exist_ok=True)
    for i in range(num_images):
        _noise_jpeg(images / f"{i:03d}.jpg", side, side * 3 // 4, seed=i)
        (labels / f"{i:03d}.txt").write_text("0 0.5 0.5 0.4 0.3\n", encoding="utf-8")
    yaml_path.write_text(
        f"path: {root}\ntrain: images/train\nval: images/train\nnames:\n  0: thing\n",
        encoding="utf-8",
    )
    return yaml_path


def huge_image(root: Path, *, width: int = 6000, height: int = 4000) -> Path:
    path = root / "huge.jpg"
    if not path.is_file():
        root.mkdir(parents=True, exist_ok=True)
        _noise_jpeg(path, width, height, seed=7)
    return path


def confident_checkpoint(root: Path, *, class_bias: float = 8.0, dense: bool = True) -> Path:
    """A yolo9t checkpoint whose class logits start at `class_bias` everywhere (8: sigmoid ≈ 1).

    `dense`: every box reaches one stride beyond its anchor on each side, so neighbouring boxes
    overlap by at most 1/3 (IoU) and class-aware NMS at 0.45 suppresses none of them: every
    (anchor, class) pair stays a live candidate through the whole NMS.
    """
    path = root / f"yolo9t_class_bias{class_bias:+g}{'_dense' if dense else ''}.pt"
    if path.is_file():
        return path
    import torch

    from libreyolo.workload.yolo9.checkpoint import save_checkpoint
    from libreyolo.workload.yolo9.model import REG_MAX, YOLOv9

    torch.manual_seed(0)
    model = YOLOv9("t", nc=80)
    with torch.no_grad():
        for tower in model.head.cv3:
            tower[-1].bias.fill_(class_bias)
        if dense:
            for tower in model.head.cv2:
                tower[-1].weight.zero_()  # distances from biases only: exactly one bin
                bias = torch.full((4, REG_MAX), -20.0)
                bias[:, 1] = 20.0  # DFL bin 1: one stride per side
                tower[-1].bias.copy_(bias.flatten())
    return save_checkpoint(model, path)


def plain_checkpoint(root: Path) -> Path:
    """A randomly initialised yolo9t checkpoint (timings are what matter here, not boxes)."""
    return confident_checkpoint(root, class_bias=-10.0, dense=False)


def _weights(work: Path, checkpoint: Path | None) -> list[str]:
    return ["--weights", str(checkpoint or plain_checkpoint(work))]


@dataclass(frozen=True)
class Scenario:
    name: str
    command: str  # "run" or "infer"
    expected_bound: str  # on the CPU
    # inputs folder (shared between scenarios), checkpoint (or None) -> the scenario's arguments
    arguments: Callable[[Path, Path | None], list[str]]
    check: Callable[[dict[str, Any]], list[str]]
    expected_bound_cuda: str | None = None  # where a GPU changes the answer

    def expected(self, device: str) -> str:
        if device != "cpu" and self.expected_bound_cuda is not None:
            return self.expected_bound_cuda
        return self.expected_bound


def _metric(doc: dict[str, Any], name: str) -> float:
    value = doc["metrics"].get(name)
    return float(value) if isinstance(value, int | float) else float("nan")


def _check_input_bound(doc: dict[str, Any]) -> list[str]:
    problems = []
    share = _metric(doc, "dataload_frac")
    if not share >= DATALOAD_SHARE_MIN:
        problems.append(f"dataload share {share:.2f} < {DATALOAD_SHARE_MIN}")
    if (
        f"{share * 100:.0f}%" not in doc["verdict"]["why"]
        or "dataload" not in doc["verdict"]["why"]
    ):
        problems.append(f"reason does not name the dataload share: {doc['verdict']['why']!r}")
    return problems


def _check_compute_bound(doc: dict[str, Any]) -> list[str]:
    problems = []
    share = _metric(doc, "dataload_frac")
    if not share <= COMPUTE_DATALOAD_SHARE_MAX:
        problems.append(f"dataload share {share:.2f} > {COMPUTE_DATALOAD_SHARE_MAX}")
    on_cpu = str(doc["run"]["device"]).startswith("cpu")
    if on_cpu and "CPU" not in doc["verdict"]["why"]:
        problems.append(f"reason does not name the CPU: {doc['verdict']['why']!r}")
    return problems


def _check_stage(stage: str, metric: str) -> Callable[[dict[str, Any]], list[str]]:
    def check(doc: dict[str, Any]) -> list[str]:
        problems = []
        own, forward = _metric(doc, metric), _metric(doc, "forward_ms")
        if not own > forward:
            problems.append(f"{stage} {own:.2f} ms is not above forward {forward:.2f} ms")
        if stage not in doc["verdict"]["why"]:
            problems.append(f"reason does not name {stage}: {doc['verdict']['why']!r}")
        return problems

    return check


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "input-bound training",
        "run",
        "dataloader",
        lambda work, ckpt: [
            str(big_jpeg_dataset(work / "big")),
            "--config",
            "input_bound",
            *_weights(work, ckpt),
        ],
        _check_input_bound,
    ),
    Scenario(
        "compute-bound training (images cached)",
        "run",
        "compute",
        lambda work, ckpt: [
            str(big_jpeg_dataset(work / "big")),
            "--config",
            "compute_bound",
            *_weights(work, ckpt),
        ],
        _check_compute_bound,
        # A 64-pixel yolo9t step cannot fill a GPU: with the input cached it is launch-bound.
        expected_bound_cuda="host / launch",
    ),
    Scenario(
        "postprocess-bound inference",
        "infer",
        "nms / postprocess",
        lambda work, ckpt: [
            "--config",
            "postprocess_bound",
            "--weights",
            str(confident_checkpoint(work)),
        ],
        _check_stage("postprocess", "nms_ms"),
    ),
    Scenario(
        "preprocess-bound inference",
        "infer",
        "preprocess",
        lambda work, ckpt: [
            str(huge_image(work)),
            "--config",
            "preprocess_bound",
            *_weights(work, ckpt),
        ],
        _check_stage("preprocess", "preprocess_ms"),
    ),
)


@dataclass(frozen=True)
class Outcome:
    scenario: Scenario
    device: str
    status: int
    stderr: str
    document: dict[str, Any] | None

    @property
    def bound(self) -> str | None:
        return None if self.document is None else self.document["verdict"]["bound"]

    @property
    def problems(self) -> list[str]:
        if self.document is None:
            return [f"no profile (exit {self.status}): {self.stderr.strip()[-200:]}"]
        expected = self.scenario.expected(self.device)
        found = [] if self.bound == expected else [f"verdict {self.bound!r}"]
        return found + self.scenario.check(self.document)

    @property
    def evidence(self) -> str:
        if self.document is None:
            return "-"
        keep = ("dataload_frac", "preprocess_ms", "forward_ms", "nms_ms", "step_ms")
        metrics = self.document["metrics"]
        return ", ".join(f"{k}={metrics[k]}" for k in keep if metrics.get(k) is not None)


def run_scenario(
    scenario: Scenario,
    inputs: Path,
    project: Path,
    *,
    checkpoint: Path | None = None,
    device: str = "cpu",
) -> Outcome:
    """Measure `scenario` into `project` through the CLI (in-process; inputs built once under
    `inputs`) and read its profile back. `device` "0" repeats it on CUDA."""
    from libreyolo.boundary.output import Output
    from libreyolo.cli.main import main

    inputs.mkdir(parents=True, exist_ok=True)
    argv = [
        "profile",
        scenario.command,
        "--config-dir",
        str(CONF_DIR),
        *scenario.arguments(inputs, checkpoint),
        "--device",
        device,
        "--project",
        str(project),
        "--json",
    ]
    out, err = io.StringIO(), io.StringIO()
    status = int(main(argv, output=Output(out, err, json_mode=True)))
    document = None
    if status == 0:
        profile = Path(json.loads(out.getvalue())["profile"])
        document = json.loads(profile.read_text(encoding="utf-8"))
    return Outcome(scenario, device, status, err.getvalue(), document)
