"""Agreement before speed: a run that is not eager fp32 is checked against eager fp32 on the same
images after its window; an export that agrees records it, one whose weights were perturbed
disagrees, the verdict says so, and `compare` makes no faster call over it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import torch

from libreyolo.document.model import Agreement
from libreyolo.measure import infer
from libreyolo.measure.agreement import agreement_of
from tests.conftest import invoke
from tests.fixture_files import YOLO9T, fixture_file

WEIGHTS = str(fixture_file(YOLO9T))
# The fixture's weights are seeded, untrained: its scores sit near the class prior, so only a
# threshold this low keeps boxes to compare (300 of them on the sample image).
LOW_CONF = "0.000001"


class _Found(NamedTuple):
    boxes: torch.Tensor
    scores: torch.Tensor
    classes: torch.Tensor


class _Runner:
    """A predict path that returns fixed detections (`InferRunner.detect`)."""

    def __init__(self, found: list[_Found], raw: torch.Tensor) -> None:
        self.found, self.raw, self.amp_effective = found, raw, False

    def step(self, iteration: int, phases: Any = None) -> None:
        raise AssertionError("agreement never times a step")

    def detect(self, iteration: int) -> tuple[object, list[_Found]]:
        return self.raw, self.found


def _found(*boxes: tuple[float, float, float, float], cls: int = 0) -> _Found:
    n = len(boxes)
    return _Found(
        torch.tensor(boxes, dtype=torch.float32).reshape(n, 4),
        torch.linspace(0.9, 0.5, n) if n else torch.zeros(0),
        torch.full((n,), cls),
    )


def test_identical_detections_agree_and_shifted_ones_do_not() -> None:
    eager = _Runner([_found((0, 0, 10, 10), (20, 20, 40, 40))], torch.zeros(2, 3))
    same = agreement_of(eager, eager, num_images=1, batch=1, random_init=False)
    assert (same.recall, same.precision, same.max_abs_diff, same.score()) == (1.0, 1.0, 0.0, 1.0)
    moved = _Runner([_found((5, 5, 15, 15), (20, 20, 40, 40))], torch.ones(2, 3))
    half = agreement_of(eager, moved, num_images=1, batch=1, random_init=False)
    assert (half.recall, half.precision, half.max_abs_diff) == (0.5, 0.5, 1.0)  # IoU 0.14 < 0.5
    other_class = _Runner([_found((0, 0, 10, 10), (20, 20, 40, 40), cls=3)], torch.zeros(2, 3))
    assert agreement_of(eager, other_class, num_images=1, batch=1, random_init=False).score() == 0


def test_random_weights_say_there_is_nothing_to_agree_on() -> None:
    nothing = _Runner([_found()], torch.zeros(2, 3))
    found = agreement_of(nothing, nothing, num_images=1, batch=1, random_init=True)
    assert found.score() is None and found.recall is None and found.precision is None
    assert found.note == "random weights: eager detects nothing, so there is nothing to agree on"
    shaped = _Runner([_found()], torch.zeros(4))
    assert (
        agreement_of(nothing, shaped, num_images=1, batch=1, random_init=True).max_abs_diff is None
    )


def _infer(project: Path, *extra: str) -> list[str]:
    return [
        "profile", "infer", "--weights", WEIGHTS, "--device", "cpu", "--warmup", "1",
        "--runs", "3", "--imgsz", "320", "--conf", LOW_CONF, "--project", str(project), *extra,
    ]  # fmt: skip


def _agreement(project: Path) -> dict[str, Any]:
    found = json.loads((project / "infer" / "profile.json").read_text())["execution"]["agreement"]
    assert isinstance(found, dict)
    return found


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIBREYOLO_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.usefixtures("cache")
def test_an_onnx_export_agrees_with_eager_and_a_perturbed_one_is_never_called_faster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eager = invoke(_infer(tmp_path / "eager"))
    assert eager.status == 0, eager.stderr
    assert (
        json.loads((tmp_path / "eager" / "infer" / "profile.json").read_text())["execution"][
            "agreement"
        ]
        is None
    )  # eager fp32 is the reference itself

    ort = invoke(_infer(tmp_path / "ort", "--exec", "onnxruntime"))
    assert ort.status == 0, ort.stderr
    agreed = Agreement(**_agreement(tmp_path / "ort"))
    assert agreed.num_images == 1 and agreed.reference_boxes > 100 and agreed.boxes > 100
    assert agreed.recall is not None and agreed.recall >= 0.99
    assert agreed.precision is not None and agreed.precision >= 0.99
    assert agreed.max_rel_diff is not None and agreed.max_rel_diff < 1e-5
    assert not agreed.disagrees(0.99)
    lines = invoke(["profile", "summary", str(tmp_path / "ort" / "infer" / "profile.json")])
    assert [
        x
        for x in lines.stdout.splitlines()
        if x.startswith("agree    with eager fp32 on 1 image: recall ")
    ]

    real_forward = infer._forward

    def perturbed(model: torch.nn.Module, *args: Any) -> Any:
        other = copy.deepcopy(model)
        with torch.no_grad():
            for parameter in other.parameters():
                parameter.mul_(1.5)  # the export is of another model than the one measured
        return real_forward(other, *args)

    monkeypatch.setattr(infer, "_forward", perturbed)
    bad = invoke(_infer(tmp_path / "bad", "--exec", "onnxruntime"))
    assert bad.status == 0, bad.stderr
    wrong = Agreement(**_agreement(tmp_path / "bad"))
    assert wrong.disagrees(0.99)
    assert wrong.recall == 0.0 and wrong.reference_boxes == 300  # it finds none of eager's
    profile = json.loads((tmp_path / "bad" / "infer" / "profile.json").read_text())
    assert "onnxruntime disagrees with eager fp32 (recall " in profile["verdict"]["why"]
    assert profile["verdict"]["evidence"]["agreement"] == 0.0

    before = str(tmp_path / "eager" / "infer" / "profile.json")
    after = str(tmp_path / "bad" / "infer" / "profile.json")
    compared = invoke(["profile", "compare", before, after])
    assert compared.status == 0
    line = [x for x in compared.stdout.splitlines() if x.startswith("img/s")]
    assert line and "but the after run disagrees with eager fp32: recall " in line[0], line
    assert "no significance call" in line[0]
