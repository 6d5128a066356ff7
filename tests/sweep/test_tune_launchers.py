"""The tune search runs through any launcher: submitit's local executor (a fresh process per
job, each point's result pickled back) gives the basic launcher's answer."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.sweep.helpers import tune_argv

SEARCH = ("tune.goal=maxfit", "tune.batch_max=2")


def _search(sweep_dir: Path, *extra: str) -> dict[str, Any]:
    argv = tune_argv(sweep_dir, *SEARCH, *extra)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads((sweep_dir / "tune.json").read_text(encoding="utf-8")))


def _answer(record: dict[str, Any]) -> list[Any]:
    return [
        (s["stopped"], s["batch"], [(p["batch"], p["fits"], p["trials"]) for p in s["path"]])
        for s in record["series"]
    ] + [(r["batch"], r["point"]) for r in record["recommended"]]


@pytest.mark.slow
def test_submitit_gives_the_basic_launchers_answer(tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    basic = _search(tmp_path / "basic")
    submitit = _search(tmp_path / "submitit", "hydra/launcher=submitit_local_leased")
    assert (
        _answer(submitit)
        == _answer(basic)
        == [
            ("batch_max", 2, [(1, True, 1), (2, True, 1)]),
            (2, "b2_s64_amp1"),
        ]
    )
    for step in submitit["series"][0]["path"]:  # the results came back from the jobs
        assert step["img_per_s"] > 0 and step["latency_ms"] > 0

    def pids(name: str) -> set[int]:
        folders = [tmp_path / name / p for p in ("b1_s64_amp1", "b2_s64_amp1")]
        return {json.loads((f / "status.json").read_text("utf-8"))["pid"] for f in folders}

    assert len(pids("basic")) == 1 and len(pids("submitit")) == 2  # a process per job
    data = json.loads((tmp_path / "submitit" / "sweep.json").read_text(encoding="utf-8"))
    assert sorted(data["points"]) == ["b1_s64_amp1", "b2_s64_amp1"]
