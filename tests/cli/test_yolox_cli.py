"""YOLOX through the CLI as a user meets it: a libreyolo 1.6.0 YOLOX file profiles inference and
training on CPU with the same outputs and exit codes as YOLOv9; its model groups compose; a
family we do not implement is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from libreyolo.config.compose import compose_config
from tests.conftest import invoke
from tests.fixture_files import YOLOX_N, fixture_file
from tests.quiet import invoke_quietly

TRAIN_PHASES = ["dataload", "to_device", "forward", "backward", "optimizer"]


@pytest.fixture(scope="module")
def yolox_n() -> Path:
    return fixture_file(YOLOX_N)


def test_infer_on_a_1_6_0_yolox_file(yolox_n: Path, tmp_path: Path) -> None:
    argv = [
        "profile",
        "infer",
        "--weights",
        str(yolox_n),
        "--device",
        "cpu",
        "--warmup",
        "1",
        "--runs",
        "6",
        "--project",
        str(tmp_path),
    ]
    path = tmp_path / "infer" / "profile.json"
    result = invoke_quietly(argv, path)  # a contended run prints two more verdict lines
    assert result.status == 0, result.stderr
    lines = result.stdout.splitlines()
    # the run's notes come after the verdict, before the path: YOLOX has no full fusion
    at = lines.index(f"profile: {path}")
    assert lines[at - 1] == "note: yolox has no 'full' fusion: the model ran as loaded"
    doc = json.loads(path.read_text())
    assert doc["run"]["model"] == "LibreYOLOXn" and doc["run"]["family"] == "yolox"
    assert doc["run"]["imgsz"] == 416  # YOLOX-n's own input size: no --imgsz given
    assert [p["name"] for p in doc["trace"]["phases"]] == ["preprocess", "forward", "postprocess"]
    summary = invoke(["profile", "summary", str(path)])
    assert summary.stdout.startswith("model LibreYOLOXn (yolox)  |  ")
    assert invoke(["profile", "summary", str(path), "--json"]).json()["family"] == "yolox"  # type: ignore[index]


def test_run_synthetic_on_a_1_6_0_yolox_file_shows_the_assigners_host_syncs(
    yolox_n: Path, tmp_path: Path
) -> None:
    argv = [
        "profile",
        "run",
        "synthetic",
        "--weights",
        str(yolox_n),
        "--device",
        "cpu",
        "--batch",
        "2",
        "--imgsz",
        "128",
        "--steps",
        "4",
        "--warmup",
        "1",
        "--workers",
        "0",
        "--project",
        str(tmp_path),
    ]
    result = invoke(argv)
    assert result.status == 0, result.stderr
    path = tmp_path / "run" / "profile.json"
    doc = json.loads(path.read_text())
    assert doc["run"]["family"] == "yolox"
    assert [p["name"] for p in doc["trace"]["phases"]][:5] == TRAIN_PHASES
    ops = invoke(["profile", "ops", str(path), "--phase", "forward", "--top", "500", "--json"])
    rows = {row["op"]: row for row in ops.json()["ops"]}  # type: ignore[index]
    # SimOTA reads each image's positives (and its real rows) back to the host: >= 1 per image
    assert rows["aten::item"]["count_per_step"] >= 2


def test_yolox_model_groups_compose() -> None:
    cfg = compose_config(["mode=infer", "model=yolox_s"])
    assert (cfg.model.family, cfg.model.size, cfg.model.weights) == (
        "yolox",
        None,
        "LibreYOLOXs.pt",
    )
    assert cfg.model.fuse == "none"


def test_a_family_we_do_not_implement_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "detr.pt"
    torch.save({"model": {"w": torch.zeros(1)}, "model_family": "rtdetr"}, path)
    result = invoke(
        [
            "profile",
            "infer",
            "--weights",
            str(path),
            "--device",
            "cpu",
            "--project",
            str(tmp_path / "p"),
        ]
    )
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "'rtdetr'" in result.stderr and "yolo9" in result.stderr and "yolox" in result.stderr


def test_a_missing_yolox_path_exits_2_like_yolov9(tmp_path: Path) -> None:
    for name in ("nope/LibreYOLOXs.pt", "nope/LibreYOLO9t.pt"):
        result = invoke(
            [
                "profile",
                "infer",
                "--weights",
                str(tmp_path / name),
                "--device",
                "cpu",
                "--project",
                str(tmp_path / "p"),
            ]
        )
        assert result.status == 2 and result.stderr.startswith("weights not found: ")
