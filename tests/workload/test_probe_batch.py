"""Both families' AutoBatch probe batches: collate's form, with the asked-for boxes per image."""

from __future__ import annotations

import torch

from libreyolo.workload.data.probe import grid_boxes
from libreyolo.workload.yolo9.family import WORKLOAD as YOLO9
from libreyolo.workload.yolox.data import MAX_LABELS
from libreyolo.workload.yolox.family import WORKLOAD as YOLOX


def test_grid_boxes_are_distinct_valid_and_inside_the_input() -> None:
    boxes, index = grid_boxes(10, 64)
    assert boxes.shape == (10, 4) and index.tolist() == list(range(10))
    assert bool((boxes[:, 2] > boxes[:, 0]).all() and (boxes[:, 3] > boxes[:, 1]).all())
    assert float(boxes.min()) >= 0 and float(boxes.max()) <= 64
    assert len({tuple(b) for b in boxes.tolist()}) == 10


def test_yolo9_probe_rows_carry_the_box_count_per_image() -> None:
    batch = YOLO9.probe_batch(3, 64, 2, boxes_per_image=5)
    assert batch.images.shape == (3, 3, 64, 64)
    assert batch.targets.shape == (15, 6)
    assert batch.targets[:, 0].tolist() == [0.0] * 5 + [1.0] * 5 + [2.0] * 5  # grouped, ascending
    assert set(batch.targets[:, 1].tolist()) == {0.0, 1.0}


def test_yolox_probe_pads_to_max_labels_and_caps_there() -> None:
    batch = YOLOX.probe_batch(2, 64, 3, boxes_per_image=7)
    assert batch.targets.shape == (2, MAX_LABELS, 5)
    real = batch.targets[..., 3] > 0  # a real row has a width
    assert real.sum(dim=1).tolist() == [7, 7]
    crowded = YOLOX.probe_batch(1, 64, 3, boxes_per_image=MAX_LABELS + 30)
    assert int((crowded.targets[..., 3] > 0).sum()) == MAX_LABELS
    assert torch.equal(crowded.targets[0, :, 0].unique(), torch.tensor([0.0, 1.0, 2.0]))
