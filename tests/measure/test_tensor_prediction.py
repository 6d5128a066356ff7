"""The tensor-peak prediction: lines through two smaller batches' steps, per phase, give the
peak of the run's batch within 10 % (YOLOv9-t and YOLOX-s, 128 and 320 px, three batches
each); and the arithmetic of the lines, the budget and the probes on known numbers."""

from __future__ import annotations

import msgspec
import pytest
import torch

from libreyolo.analysis.tensor_memory import (
    PeakLine,
    largest_batch,
    peak_lines,
    predict_peak,
)
from libreyolo.document.model import PeakPoint, TensorMemory
from libreyolo.measure.tensor_memory import probe_batches, track_step
from libreyolo.workload.registry import family

NC = 80
BOXES_PER_IMAGE = 8


def _phase_peaks(name: str, size: str, imgsz: int, batches: set[int]) -> dict[int, TensorMemory]:
    """One model's tracked step at each batch (each tracked once: the probes of one batch are
    the steps of others)."""
    workload = family(name)
    torch.manual_seed(0)
    model = workload.build(size, NC, for_training=True)
    trainer = workload.train_step(model, device=torch.device("cpu"), amp=False)

    def batch_of(n: int) -> object:
        return workload.probe_batch(n, imgsz, NC, boxes_per_image=BOXES_PER_IMAGE)

    trainer.step(batch_of(1))  # the optimizer's state exists, as after a window
    return {n: track_step(trainer, batch_of(n), imgsz=imgsz, num_images=n) for n in sorted(batches)}


@pytest.mark.parametrize(
    ("name", "size", "imgsz", "batches"),
    [
        ("yolo9", "t", 128, (4, 8, 16)),
        ("yolo9", "t", 320, (2, 4, 8)),
        ("yolox", "s", 128, (4, 8, 16)),
        ("yolox", "s", 320, (2, 4, 8)),
    ],
)
def test_the_predicted_peak_is_within_10_percent_of_the_measured(
    name: str, size: str, imgsz: int, batches: tuple[int, ...]
) -> None:
    needed = set(batches) | {probe for batch in batches for probe in probe_batches(batch)}
    steps = _phase_peaks(name, size, imgsz, needed)
    errors = {}
    for batch in batches:
        probes = [
            PeakPoint(batch=n, phase_peak_bytes=steps[n].phase_peak_bytes)
            for n in probe_batches(batch)
        ]
        tracked = msgspec.structs.replace(steps[batch], probes=probes)
        predicted = predict_peak(peak_lines(tracked), batch)
        assert predicted is not None
        errors[batch] = round((predicted - tracked.peak_bytes) / tracked.peak_bytes * 100, 1)
    assert all(abs(error) <= 10 for error in errors.values()), errors


def test_probes_are_a_quarter_and_a_half() -> None:
    assert probe_batches(1) == (1, 2)  # the one probe above the batch: dropped if out of memory
    assert probe_batches(2) == (1, 2)
    assert probe_batches(3) == (1, 2)
    assert probe_batches(8) == (2, 4)
    assert probe_batches(30) == (7, 15)


def _with_probes(*points: tuple[int, dict[str, int]]) -> TensorMemory:
    return TensorMemory(
        peak_bytes=1,
        categories={},
        phase_at_peak="forward",
        batch=8,
        imgsz=64,
        track_ms=1.0,
        probes=[PeakPoint(batch=b, phase_peak_bytes=peaks) for b, peaks in points],
    )


def test_each_phase_is_a_line_and_the_peak_is_the_highest() -> None:
    # forward: 100 + 50 an image; backward: 300 + 10 an image (the backward wins below 5).
    tracked = _with_probes(
        (2, {"forward": 200, "backward": 320}), (4, {"forward": 300, "backward": 340})
    )
    lines = {line.phase: line for line in peak_lines(tracked)}
    assert lines == {
        "forward": PeakLine("forward", 100.0, 50.0),
        "backward": PeakLine("backward", 300.0, 10.0),
    }
    assert predict_peak(tuple(lines.values()), 1) == 310.0
    assert predict_peak(tuple(lines.values()), 10) == 600.0
    # Within 600: forward allows (600 - 100) / 50 = 10, backward (600 - 300) / 10 = 30.
    assert largest_batch(tuple(lines.values()), 600) == 10
    assert largest_batch(tuple(lines.values()), 299) == 0  # the backward's fixed part alone
    assert largest_batch((PeakLine("forward", 10.0, 0.0),), 600) is None


def test_no_line_without_two_distinct_probes() -> None:
    assert peak_lines(_with_probes()) == ()
    assert peak_lines(_with_probes((2, {"forward": 1}))) == ()
    assert peak_lines(_with_probes((2, {"forward": 1}), (2, {"forward": 2}))) == ()
    assert predict_peak((), 8) is None
    # A phase seen in one probe only has no line.
    lines = peak_lines(_with_probes((1, {"forward": 1, "optimizer": 5}), (2, {"forward": 3})))
    assert [line.phase for line in lines] == ["forward"]
