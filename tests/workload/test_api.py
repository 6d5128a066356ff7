"""The public model API end to end: load_model, the sample image, predict."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import libreyolo
from libreyolo.errors import MissingFileError
from libreyolo.workload.api import RandomWeightsWarning
from libreyolo.workload.yolo9.predict import (
    SAMPLE_IMAGE,
    decode_image,
    load_images,
    postprocess,
    preprocess,
)
from tests.fixture_files import YOLO9T, fixture_file

CHECKPOINT = fixture_file(YOLO9T)


@pytest.fixture(scope="module")
def fixture_model() -> torch.nn.Module:
    return libreyolo.load_model(str(CHECKPOINT))


def test_load_model_describes_the_checkpoint(fixture_model) -> None:
    assert (fixture_model.family, fixture_model.size, fixture_model.nc) == ("yolo9", "t", 80)
    assert len(fixture_model.names) == 80 and not fixture_model.training
    with torch.no_grad():
        out = fixture_model(torch.rand(2, 3, 256, 320))
    anchors = (32 * 40) + (16 * 20) + (8 * 10)  # strides 8, 16, 32 on 256 x 320
    assert out.shape == (2, 84, anchors)


def test_sample_image_gives_boxes_at_a_lowered_conf(fixture_model) -> None:
    (path,) = load_images(None)
    assert path == SAMPLE_IMAGE
    image = decode_image(path)
    batch, boxes = preprocess([image], imgsz=320, pad=fixture_model.letterbox_pad)
    with torch.no_grad():
        pred = fixture_model(batch)
    # The fixture is random-init (class bias -10): scores are ~5e-5, so the default conf 0.25
    # finds nothing and a lowered conf exercises the whole postprocess.
    (high,) = postprocess(pred, boxes, conf=0.25)
    (low,) = postprocess(pred, boxes, conf=1e-5, max_det=50)
    assert len(low.boxes) > 0 and len(low.boxes) <= 50
    assert len(high.boxes) == 0
    assert float(low.boxes[:, 2].max()) <= image.width
    assert float(low.boxes[:, 3].max()) <= image.height


def test_load_model_known_name_without_weights_warns_and_uses_random_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LIBREYOLO_WEIGHTS_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LIBREYOLO_WEIGHTS_URL", "http://127.0.0.1:9/{name}")
    with pytest.warns(RandomWeightsWarning, match="RANDOMLY INITIALISED YOLOv9-s"):
        model = libreyolo.load_model("LibreYOLO9s.pt")
    assert model.random_init and model.size == "s"


def test_load_model_missing_path_exits_2(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError):
        libreyolo.load_model(str(tmp_path / "missing" / "weights.pt"))
