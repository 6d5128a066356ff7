"""`libreyolo profile report`: where the page goes, what it prints, and every refusal with its
exit status and one line."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from tests.conftest import invoke

GENERATOR_TAG = '<meta name="generator" content="libreyolo profile report">'


@pytest.fixture
def profile(reference_v1: Path, tmp_path: Path) -> Path:
    target = tmp_path / "run" / "profile.json"
    target.parent.mkdir()
    target.write_bytes((reference_v1 / "infer_b1.profile.json").read_bytes())
    return target


def _one_line_error(result_stderr: str) -> None:
    assert result_stderr.count("\n") == 1 and "Traceback" not in result_stderr


def test_default_destination_is_report_html_next_to_the_input(profile: Path) -> None:
    result = invoke(["profile", "report", str(profile)])
    target = profile.parent / "report.html"
    assert result.status == 0 and result.stdout == f"{target}\n" and result.stderr == ""
    assert GENERATOR_TAG in target.read_text()
    assert [p.name for p in profile.parent.iterdir() if p.name.startswith(".")] == []


def test_json_names_the_page(profile: Path) -> None:
    result = invoke(["profile", "report", str(profile), "--json"])
    assert result.status == 0
    doc = result.json()
    assert isinstance(doc, dict)
    assert set(doc) == {"report", "page", "bytes", "inputs", "num_points"}
    assert doc["page"] == "profile" and doc["inputs"] == [str(profile)]
    assert doc["bytes"] == Path(doc["report"]).stat().st_size and doc["num_points"] is None


def test_our_own_page_is_replaced(profile: Path) -> None:
    assert invoke(["profile", "report", str(profile)]).status == 0
    target = profile.parent / "report.html"
    target.write_text(target.read_text().replace("</footer>", "stale</footer>"))
    assert invoke(["profile", "report", str(profile)]).status == 0
    assert "stale" not in target.read_text()


def test_a_foreign_file_at_the_default_path_is_left_alone(profile: Path) -> None:
    foreign = profile.parent / "report.html"
    foreign.write_text("<html>my own notes</html>")
    result = invoke(["profile", "report", str(profile)])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.startswith(f"refusing to replace {foreign}: ")
    _one_line_error(result.stderr)
    assert foreign.read_text() == "<html>my own notes</html>"
    # named with -o, it is the user's choice
    assert invoke(["profile", "report", str(profile), "-o", str(foreign)]).status == 0
    assert GENERATOR_TAG in foreign.read_text()


def test_missing_input_exits_2(tmp_path: Path) -> None:
    result = invoke(["profile", "report", str(tmp_path / "nope.json")])
    assert result.status == 2 and result.stdout == ""
    _one_line_error(result.stderr)
    assert not (tmp_path / "report.html").exists()


def test_unreadable_profile_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "libreyolo.profile/v2", "kind": ')
    result = invoke(["profile", "report", str(bad)])
    assert result.status == 1 and result.stdout == ""
    _one_line_error(result.stderr)
    assert not (tmp_path / "report.html").exists()


def test_three_inputs_exit_2(profile: Path) -> None:
    result = invoke(["profile", "report", str(profile), str(profile), str(profile)])
    assert result.status == 2
    assert result.stderr.startswith("report takes one input, or two to compare; got 3")


def test_output_that_is_a_folder_exits_2(profile: Path, tmp_path: Path) -> None:
    result = invoke(["profile", "report", str(profile), "-o", str(tmp_path)])
    assert result.status == 2
    assert result.stderr.startswith(f"cannot write the report to {tmp_path}: it is a folder")


def test_output_under_a_file_exits_2_and_writes_nothing(profile: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = invoke(["profile", "report", str(profile), "-o", str(blocker / "r.html")])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.startswith(f"cannot write the report to {blocker / 'r.html'}: ")
    _one_line_error(result.stderr)
    assert blocker.read_text() == "x"


def test_json_error_is_one_object(tmp_path: Path) -> None:
    result = invoke(["profile", "report", str(tmp_path / "nope.json"), "--json"])
    assert result.status == 2 and result.stdout == ""
    assert set(json.loads(result.stderr)["error"]) == {"code", "message", "hint"}


def test_a_20_step_profile_page_is_under_1_mb(cpu_infer_profile: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert invoke(["profile", "report", str(cpu_infer_profile), "-o", str(out)]).status == 0
    assert out.stat().st_size < 1 << 20


def test_stdin_profile_lands_in_the_working_folder(
    profile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    stdin = io.TextIOWrapper(io.BytesIO(profile.read_bytes()), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    result = invoke(["profile", "report", "-"])
    assert result.status == 0, result.stderr
    assert result.stdout == f"{Path('report.html')}\n" and (tmp_path / "report.html").is_file()


def test_a_profile_and_a_sweep_folder_exit_2(profile: Path, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_text(json.dumps({"schema": "libreyolo.sweep/v1", "points": {}}))
    result = invoke(["profile", "report", str(profile), str(sweep)])
    assert result.status == 2 and result.stderr.startswith("a sweep page takes one sweep folder")
