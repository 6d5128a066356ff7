"""`libreyolo-sweep` leaves `sweep.html` beside `sweep.json`: written atomically, replaced only
when ours, and a page that cannot be drawn costs the sweep one line on stderr, nothing more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from libreyolo.errors import UsageError
from libreyolo.render.html.ours import is_our_page
from libreyolo.sweep import report as report_module
from libreyolo.sweep.report import write_report
from tests.sweep.test_report import make_sweep


def test_write_report_writes_the_page_beside_the_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_report(make_sweep(tmp_path))
    page = tmp_path / "sweep.html"
    assert is_our_page(page) and (tmp_path / "sweep.json").is_file()
    text = page.read_text(encoding="utf-8")
    # the hand-made points' profiles are no profile documents: each ok one says why
    assert text.count("profile unreadable") == 4
    assert "oom: boom" in text
    assert capsys.readouterr().err == ""
    assert not list(tmp_path.glob(".sweep.*"))  # no temp file left by the atomic write


def test_the_page_of_ours_is_replaced(tmp_path: Path) -> None:
    write_report(make_sweep(tmp_path))
    page = tmp_path / "sweep.html"
    page.write_text(page.read_text(encoding="utf-8")[:600], encoding="utf-8")  # an old one
    write_report(tmp_path)
    assert page.read_text(encoding="utf-8").rstrip().endswith("</html>")


def test_a_foreign_page_stops_the_report_and_stays(tmp_path: Path) -> None:
    make_sweep(tmp_path)
    page = tmp_path / "sweep.html"
    page.write_text("<html>my notes</html>", encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        write_report(tmp_path)
    assert caught.value.message == (f"refusing to replace {page}: libreyolo-sweep did not write it")
    assert page.read_text(encoding="utf-8") == "<html>my notes</html>"
    assert not (tmp_path / "sweep.json").exists()


def test_a_page_that_cannot_be_drawn_costs_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_report(make_sweep(tmp_path))
    assert (tmp_path / "sweep.html").is_file()

    def broken(_: object) -> str:
        raise ValueError("no page today")

    monkeypatch.setattr(report_module, "sweep_page", broken)
    report = write_report(tmp_path)
    err = capsys.readouterr().err
    assert err == "sweep page skipped: ValueError: no page today\n"
    assert json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8")) == report.data
    assert not (tmp_path / "sweep.html").exists()  # ours, and stale: removed
