"""Over many draws, the training pipeline applies each augmentation as often as configured.

A sample's augmentations are random; their rates are what a training step's data cost and
output depend on. Each case draws DRAWS samples from a seeded YoloDataset (every index its own
stream) and counts, through spies on the pipeline's own functions, how many were mosaicked,
HSV-jittered and flipped, and which scales the affine drew. A rate is accepted within four
binomial standard deviations of its probability, which a seeded stream either meets or misses
every time (the test is deterministic).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from libreyolo.workload.data import augment
from libreyolo.workload.data.augment import AugmentConfig
from libreyolo.workload.data.dataset import YoloDataset
from libreyolo.workload.data.dataset_config import DatasetSpec, load_dataset_yaml
from libreyolo.workload.data.synthetic import make_synthetic

DRAWS = 1000
IMGSZ = 32


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> DatasetSpec:
    root = tmp_path_factory.mktemp("synthetic")
    return load_dataset_yaml(make_synthetic(root, num_train=6, num_val=2, imgsz=64, seed=3))


def _draw(
    spec: DatasetSpec, config: AugmentConfig, monkeypatch: pytest.MonkeyPatch
) -> tuple[Counter[str], list[float]]:
    """How many of DRAWS samples ran each augmentation, and the affine's scales."""
    counts: Counter[str] = Counter()
    scales: list[float] = []

    def spy(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            result = real(*args, **kwargs)
            if name == "scale":
                scales.append(result)
            return result

        return counted

    for name, attribute in (
        ("mosaic", "mosaic"),
        ("hsv", "hsv_jitter"),
        ("flip", "hflip"),
        ("scale", "_draw_scale"),
    ):
        monkeypatch.setattr(augment, attribute, spy(name, getattr(augment, attribute)))
    dataset = YoloDataset(spec, IMGSZ, config, seed=11, cache=True)
    for index in range(DRAWS):
        dataset[index]
    return counts, scales


def _rate_holds(count: int, probability: float, trials: int = DRAWS) -> bool:
    spread = 4 * math.sqrt(trials * probability * (1 - probability))
    return abs(count - trials * probability) <= spread


def test_yolov9s_defaults_mosaic_and_jitter_every_sample_and_flip_half(
    spec: DatasetSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts, scales = _draw(spec, AugmentConfig(), monkeypatch)
    assert counts["mosaic"] == counts["hsv"] == counts["scale"] == DRAWS  # probability 1.0
    assert _rate_holds(counts["flip"], 0.5), counts
    # the affine's scale: U(0.5, 1.5) (1.6.0's YOLO9Config.mosaic_scale)
    assert min(scales) >= 0.5 and max(scales) <= 1.5
    assert abs(statistics.fmean(scales) - 1.0) <= 4 * (1 / math.sqrt(12)) / math.sqrt(DRAWS)
    quarter = sum(scale < 0.75 for scale in scales)
    assert _rate_holds(quarter, 0.25), quarter


def test_other_probabilities_are_honoured_independently(
    spec: DatasetSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = AugmentConfig(mosaic_prob=0.3, hsv_prob=0.6, flip_prob=0.2)
    counts, _ = _draw(spec, config, monkeypatch)
    assert _rate_holds(counts["mosaic"], 0.3), counts
    assert counts["scale"] == counts["mosaic"]  # the affine runs on a mosaic only
    assert _rate_holds(counts["hsv"], 0.6), counts
    assert _rate_holds(counts["flip"], 0.2), counts


def test_a_switched_off_augmentation_never_runs(
    spec: DatasetSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = AugmentConfig(mosaic=False, hsv_prob=0.0, flip=False)
    counts, _ = _draw(spec, config, monkeypatch)
    assert counts == Counter()
