"""1.6.0's YOLOv9 loss assigns over `max_labels` (300) target rows per image, padding rows
included; the built-in step does the same by default, and the `trimmed_targets` variant keeps
only the batch's largest box count. Both give the same loss: the padding rows assign nothing."""

from __future__ import annotations

import pytest
import torch

from libreyolo.errors import UsageError
from libreyolo.workload.family import TrainOptions
from libreyolo.workload.train import MAX_LABELS
from libreyolo.workload.yolo9.family import WORKLOAD as YOLO9
from libreyolo.workload.yolo9.loss import YOLOv9Loss, fit_rows, pad_targets
from libreyolo.workload.yolo9.model import YOLOv9
from libreyolo.workload.yolox.family import WORKLOAD as YOLOX

NC = 3
IMGSZ = 64


def _rows() -> torch.Tensor:
    """(image, class, x1, y1, x2, y2): two boxes on image 0, none on 1, one on 2."""
    return torch.tensor(
        [[0, 1, 4, 4, 20, 20], [0, 2, 30, 30, 50, 60], [2, 0, 8, 8, 40, 40]], dtype=torch.float32
    )


def test_fit_rows_pads_with_ignored_rows_and_cuts_past_the_cap() -> None:
    trimmed = pad_targets(_rows(), 3)
    assert trimmed.shape == (3, 2, 5)
    padded = fit_rows(trimmed, 300)
    assert padded.shape == (3, 300, 5)
    torch.testing.assert_close(padded[:, :2], trimmed)
    assert padded[:, 2:, 0].eq(-1).all() and padded[:, 2:, 1:].eq(0).all()
    cut = fit_rows(trimmed, 1)  # 1.6.0 drops an image's boxes past max_labels, keeping the first
    torch.testing.assert_close(cut, trimmed[:, :1])
    assert fit_rows(trimmed, None) is trimmed


def test_the_padded_loss_equals_the_trimmed_one_on_the_same_batch() -> None:
    torch.manual_seed(0)
    model = YOLOv9("t", NC, aux=True).train()
    outputs = model(torch.rand(3, 3, IMGSZ, IMGSZ))
    loss = YOLOv9Loss(NC)
    trimmed = pad_targets(_rows(), 3)
    total_trimmed, parts_trimmed = loss(outputs, trimmed, (IMGSZ, IMGSZ))
    total_padded, parts_padded = loss(outputs, fit_rows(trimmed, MAX_LABELS), (IMGSZ, IMGSZ))
    assert total_trimmed.item() > 0
    torch.testing.assert_close(total_padded, total_trimmed)
    for name in ("box", "dfl", "cls", "num_fg"):
        torch.testing.assert_close(parts_padded[name], parts_trimmed[name])
    grad_trimmed = torch.autograd.grad(total_trimmed, outputs.main[0], retain_graph=True)[0]
    grad_padded = torch.autograd.grad(total_padded, outputs.main[0])[0]
    torch.testing.assert_close(grad_padded, grad_trimmed)


def test_the_step_assigns_over_1_6_0s_rows_unless_trimmed() -> None:
    model = YOLOv9("t", NC, aux=True)
    assert YOLO9.train_step(model, device=torch.device("cpu"), amp=False).target_rows == 300
    fewer = TrainOptions(max_labels=100)
    assert YOLO9.train_step(model, device=torch.device("cpu"), amp=False, options=fewer)
    trimmed = TrainOptions(variants=frozenset({"trimmed_targets"}))
    step = YOLO9.train_step(model, device=torch.device("cpu"), amp=False, options=trimmed)
    assert step.target_rows is None and not step.loss.vectorised  # 1.6.0's arithmetic
    vectorised = TrainOptions(variants=frozenset({"vectorised_assigner"}))
    step = YOLO9.train_step(model, device=torch.device("cpu"), amp=False, options=vectorised)
    assert step.target_rows == 300 and step.loss.vectorised


def test_the_step_feeds_the_loss_its_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, ...]] = []
    model = YOLOv9("t", NC, aux=True)
    step = YOLO9.train_step(model, device=torch.device("cpu"), amp=False)
    real_call = step.loss.__call__

    def spy(outputs: object, targets: torch.Tensor, imgsz: object = None) -> object:
        seen.append(tuple(targets.shape))
        return real_call(outputs, targets, imgsz)

    monkeypatch.setattr(step, "loss", spy)
    step.step(YOLO9.probe_batch(2, IMGSZ, NC, boxes_per_image=2))
    assert seen == [(2, 300, 5)]


def test_options_a_family_cannot_honour_are_refused() -> None:
    model = YOLOv9("t", NC, aux=True)
    both = TrainOptions(max_labels=100, variants=frozenset({"trimmed_targets"}))
    with pytest.raises(UsageError, match="trimmed targets have as many rows"):
        YOLO9.train_step(model, device=torch.device("cpu"), amp=False, options=both)
    yolox = YOLOX.build("n", NC, for_training=True)
    with pytest.raises(UsageError, match="keeps 50 target rows"):
        YOLOX.train_step(yolox, device=torch.device("cpu"), amp=False, options=TrainOptions(100))
    trimmed = TrainOptions(variants=frozenset({"trimmed_targets"}))
    with pytest.raises(UsageError, match="yolox has no such variant"):
        YOLOX.train_step(yolox, device=torch.device("cpu"), amp=False, options=trimmed)
    vectorised = TrainOptions(variants=frozenset({"vectorised_assigner"}))
    with pytest.raises(UsageError, match="vectorised_assigner: yolox has no such variant"):
        YOLOX.train_step(yolox, device=torch.device("cpu"), amp=False, options=vectorised)
    assert YOLOX.train_step(yolox, device=torch.device("cpu"), amp=False).target_rows == 50
