"""Strings from files reach text output with control characters escaped; JSON stays exact."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from libreyolo.analysis.lookup import MetricValue
from libreyolo.analysis.sweep import SweepView
from libreyolo.boundary.output import Output
from libreyolo.cli.main import main
from libreyolo.document.sweep_model import SweepRecord, SweepRow
from libreyolo.errors import AnalysisError
from libreyolo.render.safe import NAME_CHARS, safe_text, short_name
from libreyolo.render.text import to_lines
from tests.conftest import CliResult
from tests.render.hostile import (
    FAKE_LINE,
    HOSTILE,
    HOSTILE_WORD,
    SMALL_TRACE,
    make_hostile,
    stray_controls,
    v2_raw,
    write_json,
)


def test_safe_text_escapes_c0_del_c1_and_bidi_controls() -> None:
    assert safe_text("a\x1b[2J\x07\x08\x00|\n\r\t|\x7f\x9b\x85|\u202e\u2066\u2028z") == (
        "a\\x1b[2J\\x07\\x08\\x00|\\n\\r\\t|\\x7f\\x9b\\x85|\\u202e\\u2066\\u2028z"
    )


def test_a_lone_surrogate_is_shown_escaped_and_the_text_can_be_printed(tmp_path: Path) -> None:
    # a `\\ud800` escape in a JSON name: no encoding can print it, so the view escapes it
    assert safe_text("a\ud800b\udfffc") == "a\\ud800b\\udfffc"
    fixture = Path(__file__).parents[1] / "fixtures" / "docs" / "train_yolo9t_cpu.profile.json"
    text = fixture.read_text(encoding="utf-8").replace('"LibreYOLO9t"', '"Libre\\ud800YOLO9t"', 1)
    profile = write_json(tmp_path / "p.json", json.loads(text))
    out, err = io.StringIO(), io.StringIO()
    assert main(["profile", "summary", str(profile)], output=Output(out, err)) == 0, err.getvalue()
    assert out.getvalue().startswith("model Libre\\ud800YOLO9t (yolo9)")
    out.getvalue().encode("utf-8")  # what a real stdout does with it


def test_safe_text_keeps_printable_text_and_backslashes() -> None:
    text = "void at::native::elementwise<float>(…) [bold] C:\\w\\x.pt 中文 █·"
    assert safe_text(text) is text


def test_short_name_keeps_head_and_tail_of_long_names() -> None:
    name = "h" * 200 + "TAIL"
    short = short_name(name)
    assert len(short) == NAME_CHARS
    assert short.startswith("h" * 50) and short.endswith("hTAIL") and "…" in short
    assert short_name("short") == "short"


def test_short_name_escapes_before_it_counts() -> None:
    assert short_name("\n" * 100, limit=10) == "\\n\\n\\n…n\\n"


def test_to_lines_guards_strings_a_view_passes_through() -> None:
    assert to_lines(MetricValue("bound", "x\n>> COMPUTE: fake\x1b[2J")) == [
        "x\\n>> COMPUTE: fake\\x1b[2J"
    ]


def test_sweep_table_escapes_point_names_and_reasons() -> None:
    row = SweepRow(status="failed", code="crashed", reason="r\n>> COMPUTE: x")
    data = SweepRecord(points={"p\x1b[2J": row}, recommended={}, num_failed=1)
    lines = to_lines(SweepView(data))
    assert all(not stray_controls(line) for line in lines)
    assert lines[1].startswith("p\\x1b[2J ") and lines[1].endswith("crashed: r\\n>> COMPUTE: x")


@pytest.mark.parametrize("json_mode", [False, True], ids=["text", "json"])
def test_error_is_one_line_with_controls_escaped(json_mode: bool) -> None:
    err = io.StringIO()
    Output(io.StringIO(), err, json_mode=json_mode).error(
        AnalysisError("failed to analyse a\nb\x1b[2J", hint="h\r")
    )
    assert err.getvalue().count("\n") == 1 and not stray_controls(err.getvalue())
    if json_mode:
        assert json.loads(err.getvalue())["error"]["message"] == "failed to analyse a\nb\x1b[2J"
    else:
        assert err.getvalue() == "failed to analyse a\\nb\\x1b[2J (h\\r)\n"


def _invoke(argv: list[str], *, color: bool) -> CliResult:
    out, err = io.StringIO(), io.StringIO()
    output = Output(out, err, json_mode="--json" in argv, color=color, width=100)
    status = main(["profile", *argv], output=output)
    return CliResult(int(status), out.getvalue(), err.getvalue())


@pytest.fixture
def hostile(tmp_path: Path, gpu_traces: Path) -> Path:
    return write_json(tmp_path / "hostile.json", make_hostile(v2_raw(gpu_traces / SMALL_TRACE)))


# reader argv (the hostile file is `F`) -> an escaped string that its text output must show
READERS = {
    "summary": (["summary", "F"], ["model" + HOSTILE, "why" + HOSTILE, "note" + HOSTILE]),
    "kernels": (["kernels", "F"], [HOSTILE_WORD, "cat" + HOSTILE]),
    "ops": (["ops", "F"], ["aten::op" + HOSTILE]),
    "phases": (["phases", "F"], ["phase" + HOSTILE]),
    "compare": (["compare", "F", "F"], ["bound" + HOSTILE]),
    "what-if": (["what-if", "F", "--remove-category", "cat"], ["bound" + HOSTILE]),
    "get": (["get", "F", "bound"], ["bound" + HOSTILE]),
    "get-list": (["get", "F"], ["metric" + HOSTILE]),
    "kernels-phase": (["kernels", "F", "--phase", "phase" + HOSTILE], [HOSTILE_WORD]),
}


@pytest.mark.parametrize("color", [False, True], ids=["plain", "color"])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_reader_text_shows_hostile_names_escaped(reader: str, color: bool, hostile: Path) -> None:
    argv, shown = READERS[reader]
    result = _invoke([str(hostile) if a == "F" else a for a in argv], color=color)
    assert (result.status, result.stderr) == (0, "")
    assert stray_controls(result.stdout) == []
    assert not any(line.startswith(FAKE_LINE) for line in result.stdout.splitlines())
    for text in shown:
        assert safe_text(text) in result.stdout
    assert "[bold]markup[/]" in result.stdout  # shown as it is: never parsed as markup


@pytest.mark.parametrize(
    "reader", ["summary", "kernels", "ops", "phases", "compare", "what-if", "get", "get-list"]
)
def test_reader_json_keeps_hostile_names_exact(reader: str, hostile: Path) -> None:
    argv, shown = READERS[reader]
    result = _invoke([*(str(hostile) if a == "F" else a for a in argv), "--json"], color=False)
    assert (result.status, result.stderr) == (0, "")
    assert stray_controls(result.stdout) == []  # json.dumps escapes them
    values = json.dumps(json.loads(result.stdout), ensure_ascii=False)
    for text in shown:
        assert json.dumps(text, ensure_ascii=False)[1:-1] in values


def test_unknown_phase_error_quotes_names_on_one_line(hostile: Path) -> None:
    result = _invoke(["kernels", str(hostile), "--phase", "nope"], color=False)
    assert result.status == 2
    assert result.stderr.count("\n") == 1 and not stray_controls(result.stderr)
    assert safe_text("phase" + HOSTILE) in result.stderr


def test_long_op_name_is_shortened_in_text_and_whole_in_json(
    tmp_path: Path, gpu_traces: Path
) -> None:
    raw = v2_raw(gpu_traces / SMALL_TRACE)
    name = "aten::" + "x" * 500 + "_end"
    raw["trace"]["ops"][0]["name"] = name
    path = write_json(tmp_path / "long.json", raw)
    text = _invoke(["ops", str(path), "--top", "100"], color=False).stdout
    assert short_name(name) in text and name not in text
    rows = json.loads(_invoke(["ops", str(path), "--top", "100", "--json"], color=False).stdout)
    assert name in [row["op"] for row in rows["ops"]]
