"""`get` knows every efficiency key in every profile it reads: a value where the profile has
one, `null` (unknown, exit 0) in libreyolo 1.6.0 files, bare traces and v2 files written
before the keys existed; never "unknown metric"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from libreyolo.analysis.build import NEWER_KEYS
from libreyolo.analysis.efficiency import KEYS
from libreyolo.analysis.execution import KEYS as EXEC_KEYS
from libreyolo.document.files import save
from tests.compute_profiles import gpu_profile
from tests.conftest import invoke

V1_FILES = (
    "infer_b1.profile.json",
    "infer_b4.profile.json",
    "infer_repeat.json",
    "train_cpu.profile.json",
)


def _unknown_everywhere(path: Path) -> None:
    listing = invoke(["profile", "get", str(path)])
    assert listing.status == 0
    assert {f"  {key}" for key in KEYS} <= set(listing.stdout.splitlines())
    assert invoke(["profile", "get", str(path), "mfu"]).stdout == "null\n"
    result = invoke(["profile", "get", str(path), "flops_per_image", "--json"])
    assert (result.status, result.stderr) == (0, "")
    assert json.loads(result.stdout) == {"flops_per_image": None}


@pytest.mark.parametrize("name", V1_FILES)
def test_a_v1_file_answers_null(name: str, reference_v1: Path) -> None:
    result = invoke(["profile", "get", str(reference_v1 / name), "mfu"])
    assert (result.status, result.stdout, result.stderr) == (0, "null\n", "")
    _unknown_everywhere(reference_v1 / name)


def test_a_bare_trace_answers_null(gpu_traces: Path) -> None:
    _unknown_everywhere(gpu_traces / "tracelens_h100_vit_infer_1step.json.gz")


def test_an_older_v2_file_answers_null(tmp_path: Path) -> None:
    path = save(gpu_profile(), tmp_path / "current.json")
    raw = json.loads(path.read_text())
    raw.pop("compute")
    raw.pop("execution", None)  # a file from before the compute record predates this one too
    newer = set(NEWER_KEYS)  # none of the keys added since: efficiency, execution, ...
    assert {*KEYS, *EXEC_KEYS} <= newer
    raw["metrics"] = {k: v for k, v in raw["metrics"].items() if k not in newer}
    older = tmp_path / "older.json"
    older.write_text(json.dumps(raw))
    _unknown_everywhere(older)
    summary = invoke(["profile", "summary", str(older)]).stdout.splitlines()
    assert summary[1] == "compute  FLOPs unknown (no count in this file)"


def test_a_current_file_answers_its_values(tmp_path: Path) -> None:
    path = str(save(gpu_profile(), tmp_path / "profile.json"))
    values = {key: invoke(["profile", "get", path, key]).stdout for key in ("mfu", "peak_source")}
    assert values == {"mfu": "0.005276\n", "peak_source": "table\n"}
    assert invoke(["profile", "get", path, "achieved_tflops"]).stdout == "5.22\n"


def test_a_v1_file_on_stdin_is_read_once_and_answers(reference_v1: Path) -> None:
    """`get -` of an older file peeks at its map and then loads the whole document: both
    readings must see the same stdin (they used to find it empty the second time)."""
    import subprocess
    import sys

    data = (reference_v1 / "infer_b1.profile.json").read_bytes()
    for metric, expected in (("mfu", "null"), ("img_per_s", "7.81")):
        done = subprocess.run(
            [sys.executable, "-m", "libreyolo", "profile", "get", "-", metric],
            input=data,
            capture_output=True,
            check=False,
        )
        assert (done.returncode, done.stdout.decode().strip(), done.stderr) == (0, expected, b"")
