"""`compare` on real CPU runs: the same config measured twice is not a difference; a 2.25x
larger input is. Both sides use `--repeat 3`, as the significance rule requires, with one
intra-op thread (see `one_thread`: with two on a shared 2-core machine, whole runs flip between
two speeds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import invoke
from tests.truth.scenarios import one_thread, plain_checkpoint

pytestmark = pytest.mark.slow


def _measure(weights: Path, project: Path, imgsz: int) -> str:
    result = invoke(
        [
            "profile",
            "infer",
            "--weights",
            str(weights),
            "--device",
            "cpu",
            "--imgsz",
            str(imgsz),
            "--warmup",
            "3",
            "--runs",
            "12",
            "--repeat",
            "3",
            "--no-trace",
            "--project",
            str(project),
            "--json",
        ]
    )
    assert result.status == 0, result.stderr
    out = result.json()
    assert isinstance(out, dict)
    return str(out["profile"])


def _compare(before: str, after: str) -> dict[str, Any]:
    result = invoke(["profile", "compare", before, after, "--json"])
    assert result.status == 0, result.stderr
    out = result.json()
    assert isinstance(out, dict)
    return out["img_per_s"]


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("compare_real")
    weights = plain_checkpoint(root)
    with one_thread():
        return {
            "256": _measure(weights, root / "a", 256),
            "256 again": _measure(weights, root / "b", 256),
            "384": _measure(weights, root / "c", 384),
        }


def test_the_same_config_twice_is_not_significant(measured: dict[str, str]) -> None:
    call = _compare(measured["256"], measured["256 again"])
    assert call["n"] == [3, 3]
    assert call["significant"] is False, call["significance"]


def test_imgsz_256_against_384_is_significant(measured: dict[str, str]) -> None:
    call = _compare(measured["256"], measured["384"])
    assert call["n"] == [3, 3]
    assert call["significant"] is True, call["significance"]
    assert call["after"] < call["before"]  # 2.25x the pixels: fewer images per second
