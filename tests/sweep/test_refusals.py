"""A sweep point the collectors refuse before measuring (exit 2 on the CLI) is a `failed` point
with code `usage` and the refusal's line as its reason; the sweep goes on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import ProfileConfig
from libreyolo.document.convert import to_plain
from libreyolo.measure import memory_check
from libreyolo.sweep.point import run_point
from tests.sweep.helpers import CHECKPOINT


def _cfg(tmp_path: Path, **changes: Any) -> dict[str, Any]:
    cfg = as_plain_dict(ProfileConfig())
    cfg |= {"mode": "infer", "device": {"name": "cpu"}, "imgsz": 64, "trace": False}
    cfg["model"] |= {"weights": str(CHECKPOINT)}
    cfg["window"] |= {"warmup": 1, "runs": 2}
    cfg["sweep"] |= {"lock_dir": str(tmp_path / "locks")}
    return cfg | changes


def _failed(record: object, folder: Path, code: str = "usage") -> str:
    assert isinstance(record, dict)
    assert (record["status"], record["code"]) == ("failed", code)
    assert json.loads((folder / "status.json").read_text(encoding="utf-8")) == record
    assert not (folder / "infer").exists()
    return str(record["reason"])


def test_a_point_with_too_many_threads_fails_as_usage(tmp_path: Path) -> None:
    folder = tmp_path / "t9999"
    record = to_plain(run_point(_cfg(tmp_path, threads=9999), folder, isolate=False))
    assert _failed(record, folder).startswith("--threads 9999 exceeds 4 threads for each of the ")


def test_a_point_the_host_memory_cannot_hold_does_not_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_check, "read_available_bytes", lambda: 100_000_000)
    folder = tmp_path / "b512"
    record = to_plain(run_point(_cfg(tmp_path, batch=512), folder, isolate=False))
    # refused before measuring, and recorded as out of memory: a bound a search stops at
    reason = _failed(record, folder, code="oom")
    assert reason.startswith("--batch 512 at --imgsz 64 needs about ")
    assert "; 0.1 GB are available (lower --batch to about " in reason  # and the way out
    assert reason.endswith(" or --imgsz)")
