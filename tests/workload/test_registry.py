"""The family registry: lookup, and which family a checkpoint file holds."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from libreyolo.errors import CheckpointError, UsageError
from libreyolo.workload import registry
from libreyolo.workload.family import Workload
from libreyolo.workload.yolo9.model import YOLOv9
from tests.fixture_files import YOLO9T, fixture_file

FIXTURE = fixture_file(YOLO9T)


def test_yolo9_is_built_in_and_a_workload() -> None:
    yolo9 = registry.family("yolo9")
    assert isinstance(yolo9, Workload)
    assert (yolo9.name, yolo9.sizes, yolo9.default_size) == ("yolo9", ("t", "s", "m", "c"), "t")
    assert registry.family("yolo9") is yolo9  # cached


def test_an_unknown_family_lists_the_families() -> None:
    with pytest.raises(UsageError, match="no model family 'nope'") as caught:
        registry.family("nope")
    assert "yolo9" in (caught.value.hint or "")


def test_a_family_whose_module_fails_is_an_error_only_when_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(registry.BUILTIN, "broken", "libreyolo.workload.no_such_module:WORKLOAD")
    registry.clear_cache()
    try:
        assert registry.family("yolo9").name == "yolo9"
        with pytest.raises(UsageError, match="'broken' cannot be loaded"):
            registry.family("broken")
    finally:
        monkeypatch.undo()
        registry.clear_cache()


def _save(obj: object, path: Path) -> Path:
    torch.save(obj, path)
    return path


def test_detect_by_metadata_name_and_keys(tmp_path: Path) -> None:
    state = YOLOv9("t", 3).state_dict()
    meta = _save({"model": state, "model_family": "yolo9", "size": "t", "nc": 3}, tmp_path / "a.pt")
    named = _save({"model": {"x": torch.zeros(1)}}, tmp_path / "LibreYOLO9s.pt")
    keys = _save(state, tmp_path / "weights.pt")
    for path, expected in ((meta, ("t", 3)), (named, ("s", None)), (keys, ("t", 3))):
        found, size, nc = registry.detect_file(path)
        assert (found.name, size, nc) == ("yolo9", *expected), path


def test_detect_the_v1_fixture() -> None:
    found, size, nc = registry.detect_file(FIXTURE)
    assert (found.name, size, nc) == ("yolo9", "t", 80)


@pytest.mark.parametrize("other", ["rtdetr", "yolo11"])
def test_a_family_we_do_not_implement_is_one_line(tmp_path: Path, other: str) -> None:
    path = _save({"model": {"w": torch.zeros(1)}, "model_family": other}, tmp_path / "m.pt")
    with pytest.raises(CheckpointError) as caught:
        registry.detect_file(path)
    message = str(caught.value)
    assert f"holds a {other!r} model" in message and "yolo9" in message
    assert "\n" not in message


def test_keys_nobody_claims_are_one_line(tmp_path: Path) -> None:
    path = _save({"encoder.w": torch.zeros(1)}, tmp_path / "m.pt")
    with pytest.raises(CheckpointError, match="no model family we know holds these weights"):
        registry.detect_file(path)


def test_workload_of_a_file_is_its_own_family(tmp_path: Path) -> None:
    from libreyolo.workload.api import workload_of

    path = _save(YOLOv9("t", 3).state_dict(), tmp_path / "weights.pt")
    assert workload_of(str(path), "some-other-family").name == "yolo9"
