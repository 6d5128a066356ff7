"""`--threads N` from the command line to the measurement and the profile, on CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from libreyolo.cli.parser import build_parser
from libreyolo.measure.host import usable_cpus
from libreyolo.measure.threads import crowding_warning
from tests.conftest import invoke
from tests.fixture_files import YOLO9T, fixture_file

CHECKPOINT = fixture_file(YOLO9T)
TINY = ["--device", "cpu", "--imgsz", "64", "--warmup", "1", "--runs", "2", "--no-trace"]


@pytest.mark.parametrize("command", [["run", "data.yaml"], ["infer"]])
def test_threads_is_a_positive_int_and_unset_by_default(command: list[str]) -> None:
    parser = build_parser()
    assert parser.parse_args(["profile", *command, "--threads", "2"]).threads == 2
    assert parser.parse_args(["profile", *command]).threads is None


@pytest.mark.parametrize(
    ("value", "message"),
    [("0", "must be a positive integer, got 0"), ("x", "must be an integer, got x")],
)
@pytest.mark.parametrize("command", [["run", "data.yaml"], ["infer"]])
def test_a_bad_thread_count_exits_2(command: list[str], value: str, message: str) -> None:
    result = invoke(["profile", *command, "--threads", value])
    assert result.status == 2 and result.stdout == ""
    assert f"argument --threads: {message}" in result.stderr


def test_infer_runs_with_the_threads_asked_and_gives_torch_its_own_back(
    tmp_path: Path, two_threads: None
) -> None:
    project = tmp_path / "p"
    argv = ["profile", "infer", "--weights", str(CHECKPOINT), *TINY, "--threads", "1"]
    result = invoke([*argv, "--project", str(project), "--json"])
    assert result.status == 0, result.stderr
    document = json.loads((project / "infer" / "profile.json").read_text())
    assert document["environment"]["num_threads"] == 1
    assert document["run"]["config"]["threads"] == 1
    assert "threads=1" in document["run"]["overrides"]
    assert torch.get_num_threads() == 2


def test_more_threads_than_cpus_is_one_warning_line_and_a_note(tmp_path: Path) -> None:
    threads = usable_cpus() + 1
    project = tmp_path / "p"
    argv = ["profile", "infer", "--weights", str(CHECKPOINT), *TINY, "--threads", str(threads)]
    result = invoke([*argv, "--project", str(project)])
    assert result.status == 0, result.stderr
    line = crowding_warning(threads, 0, usable_cpus(), on_cpu=True)
    assert [w for w in result.stderr.splitlines() if "CPUs" in w] == [f"warning: {line}"]
    document = json.loads((project / "infer" / "profile.json").read_text())
    assert line in document["notes"] and "notes" not in document["run"]["config"]
