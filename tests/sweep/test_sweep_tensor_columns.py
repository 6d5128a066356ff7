"""The sweep table's truth columns: a training point's tracked tensor peak and its probes'
prediction's error against it, on hand-made point folders; absent from a sweep where no point
tracked its tensors (inference)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import invoke
from tests.sweep.test_report import make_point


def test_each_point_shows_its_tensor_peak_and_the_predictions_error(tmp_path: Path) -> None:
    make_point(
        tmp_path, 4, 64, 80.0, efficiency={"tensor_peak_mb": 510.3, "tensor_predicted_mb": 505.2}
    )
    make_point(
        tmp_path, 8, 64, 120.0, efficiency={"tensor_peak_mb": 986.0, "tensor_predicted_mb": 986.0}
    )
    make_point(tmp_path, 1, 64, 30.0, efficiency={"tensor_peak_mb": 150.0})  # batch 1: no probes
    make_point(tmp_path, 2, 64, None)  # out of memory: no profile
    lines = invoke(["profile", "summary", str(tmp_path)]).stdout.splitlines()
    assert lines[0].split() == [
        "point", "status", "img/s", "MFU", "VRAM", "MB", "RSS", "MB", "tensor", "MB", "pred",
        "thrash", "contended", "verdict",
    ]  # fmt: skip
    cells = {line.split()[0]: line.split()[6:8] for line in lines[1:5]}
    assert cells == {
        "b8_s64_amp1": ["986.0", "+0.0%"],
        "b4_s64_amp1": ["510.3", "-1.0%"],
        "b1_s64_amp1": ["150.0", "-"],
        "b2_s64_amp1": ["-", "-"],
    }
    data = invoke(["profile", "summary", str(tmp_path), "--json"]).json()
    assert isinstance(data, dict)
    metrics = data["points"]["b4_s64_amp1"]["metrics"]
    assert (metrics["tensor_peak_mb"], metrics["tensor_predicted_mb"]) == (510.3, 505.2)


def test_an_inference_sweep_has_no_truth_columns(tmp_path: Path) -> None:
    make_point(tmp_path, 1, 64, 50.0)
    header = invoke(["profile", "summary", str(tmp_path)]).stdout.splitlines()[0]
    assert "tensor" not in header and "pred" not in header
