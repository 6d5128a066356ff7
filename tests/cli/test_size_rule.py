"""One size rule for both families: a size the user typed must match the checkpoint, and the
default (no `--size`) never overrides the file's own size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from libreyolo.workload.yolo9.checkpoint import save_checkpoint as save_yolo9
from libreyolo.workload.yolo9.model import YOLOv9
from libreyolo.workload.yolox.checkpoint import save_checkpoint as save_yolox
from libreyolo.workload.yolox.model import YOLOX
from tests.conftest import invoke

FAST = ["--device", "cpu", "--imgsz", "64", "--warmup", "0", "--runs", "2", "--no-trace"]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Size-s files of both families under names that do not say their size."""
    root = tmp_path_factory.mktemp("ckpt")
    return {
        "yolo9": save_yolo9(YOLOv9("s", 80), root / "mine_a.pt"),
        "yolox": save_yolox(YOLOX("s", 80), root / "mine_b.pt"),
    }


@pytest.mark.parametrize(("family", "name"), [("yolo9", "LibreYOLO9s"), ("yolox", "LibreYOLOXs")])
def test_without_size_the_checkpoint_decides(
    tmp_path: Path, checkpoints: dict[str, Path], family: str, name: str
) -> None:
    argv = ["profile", "infer", "--weights", str(checkpoints[family]), *FAST]
    result = invoke([*argv, "--project", str(tmp_path), "--json"])
    assert result.status == 0, result.stderr
    doc = result.json()
    assert isinstance(doc, dict)
    profile = json.loads(Path(doc["profile"]).read_text(encoding="utf-8"))
    assert profile["run"]["model"] == name


@pytest.mark.parametrize(("family", "label"), [("yolo9", "YOLOv9-s"), ("yolox", "YOLOX-s")])
def test_a_typed_size_must_match_the_checkpoint(
    tmp_path: Path, checkpoints: dict[str, Path], family: str, label: str
) -> None:
    path = checkpoints[family]
    argv = ["profile", "infer", "--weights", str(path), "--size", "t", *FAST]
    result = invoke([*argv, "--project", str(tmp_path)])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.startswith(f"{path}: size 't' was asked for but the file holds {label} ")
    assert not (tmp_path / "infer").exists()
    matching = invoke([*argv[: -len(FAST) - 2], "--size", "s", *FAST, "--project", str(tmp_path)])
    assert matching.status == 0, matching.stderr


def test_a_typed_size_must_match_a_published_name(tmp_path: Path) -> None:
    argv = ["profile", "infer", "--weights", "LibreYOLO9s.pt", "--size", "t", *FAST]
    result = invoke([*argv, "--project", str(tmp_path)])
    assert result.status == 2
    assert result.stderr == "--size t contradicts the weights name LibreYOLO9s.pt (size s)\n"
