"""Our Chrome traces load in Holistic Trace Analysis (HTA), the usual next tool after ours."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import invoke
from tests.fixture_files import YOLO9T, fixture_file

CHECKPOINT = fixture_file(YOLO9T)


def test_infer_trace_loads_in_hta(tmp_path: Path) -> None:
    trace_analysis = pytest.importorskip("hta.trace_analysis")
    result = invoke(
        [
            "profile",
            "infer",
            "--weights",
            str(CHECKPOINT),
            "--device",
            "cpu",
            "--warmup",
            "1",
            "--runs",
            "4",
            "--imgsz",
            "128",
            "--project",
            str(tmp_path / "p"),
        ]
    )
    assert result.status == 0, result.stderr
    folder = tmp_path / "hta"
    folder.mkdir()
    shutil.copy(tmp_path / "p" / "infer" / "profile_trace.json", folder)
    analysis = trace_analysis.TraceAnalysis(trace_dir=str(folder))
    assert list(analysis.t.traces) == [0]
    assert len(analysis.t.get_trace(0)) > 0
