"""`libreyolo profile report` against hostile or unlucky destinations and sweeps.

* Links: a destination, its folder or a folder the report creates swapped for a symbolic link
  while the page is built is refused (exit 2), never written through; a folder reached through
  a link is ordinary use.
* Point names: the longest a record may hold renders (cut short in headings, exact in the
  data), a longer one exits 1 with one line and writes nothing, and a lone surrogate is shown
  escaped instead of failing the page.
* A huge batch search: the page draws its series up to a budget and says how many it shows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from libreyolo.document.convert import to_plain
from libreyolo.document.sweep_io import TUNE_FILE
from libreyolo.document.sweep_model import MAX_NAME_CHARS
from libreyolo.render.html import tune_charts
from tests.cli.test_report_destination import _refused
from tests.conftest import invoke
from tests.sweep.test_report import make_point
from tests.tune_records import knee_record, write_tune_sweep

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def profile(reference_v1: Path, tmp_path: Path) -> Path:
    target = tmp_path / "run" / "profile.json"
    target.parent.mkdir()
    target.write_bytes((reference_v1 / "infer_b1.profile.json").read_bytes())
    return target


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A folder the report must never write into, holding one file it must never change."""
    folder = tmp_path / "victim"
    folder.mkdir()
    (folder / "keep.html").write_text("keep", encoding="utf-8")
    return folder


def _untouched(victim: Path) -> None:
    assert sorted(p.name for p in victim.iterdir()) == ["keep.html"]
    assert (victim / "keep.html").read_text(encoding="utf-8") == "keep"


def _no_temp_files(folder: Path) -> None:
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []


def _while_built(monkeypatch: pytest.MonkeyPatch, act: Any) -> None:
    """Run `act` once the profile page is built, before it is written: a racer's move."""
    from libreyolo.render.html import profile_page as module

    build = module.profile_page

    def racing(report: Any) -> str:
        page = build(report)
        act()
        return page

    monkeypatch.setattr(module, "profile_page", racing)


# --- links -----------------------------------------------------------------------------------


@pytest.mark.parametrize("existing", [False, True])
def test_a_link_planted_at_the_destination_while_the_page_is_built_is_refused(
    profile: Path, tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    target = tmp_path / "page.html"
    if existing:
        target.write_text("old", encoding="utf-8")

    def plant() -> None:
        target.unlink(missing_ok=True)
        target.symlink_to(victim / "keep.html")

    _while_built(monkeypatch, plant)
    _refused([str(profile), "-o", str(target)], target, "it was replaced while the page was built")
    assert target.is_symlink() and os.readlink(target) == str(victim / "keep.html")
    _untouched(victim)
    _no_temp_files(tmp_path)


def test_a_folder_swapped_for_a_link_while_the_page_is_built_is_refused(
    profile: Path, tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()

    def swap() -> None:
        folder.rename(tmp_path / "moved")
        folder.symlink_to(victim)

    _while_built(monkeypatch, swap)
    target = folder / "page.html"
    _refused(
        [str(profile), "-o", str(target)], target, f"{folder} was replaced while the page was built"
    )
    _untouched(victim)
    assert list((tmp_path / "moved").iterdir()) == []


def test_a_folder_the_report_creates_swapped_for_a_link_is_refused(
    profile: Path, tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A racer replaces the folder `a` right after it is made, before the next is made in it."""
    make = os.mkdir

    def racing(path: Any, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        make(path, mode, dir_fd=dir_fd)
        if os.path.basename(os.fspath(path)) == "a":
            os.rmdir(path, dir_fd=dir_fd)
            os.symlink(victim, path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", racing)
    target = tmp_path / "new" / "a" / "b" / "page.html"
    reason = "a folder on its path was replaced while the page was built"
    _refused([str(profile), "-o", str(target)], target, reason)
    _untouched(victim)


@pytest.mark.parametrize("page", ["report.html", "sweep.html"])
def test_a_default_page_that_is_a_link_is_refused_and_kept(
    profile: Path, sweep: Path, victim: Path, page: str
) -> None:
    source = profile if page == "report.html" else sweep
    link = (profile.parent if page == "report.html" else sweep) / page
    link.unlink(missing_ok=True)  # the sweep's own page
    link.symlink_to(victim / "keep.html")
    _refused([str(source)], link, "it is a symbolic link")
    assert link.is_symlink()
    _untouched(victim)


def test_a_page_goes_into_a_real_folder_reached_through_a_link(
    profile: Path, tmp_path: Path
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    target = tmp_path / "alias" / "sub" / "page.html"
    result = invoke(["profile", "report", str(profile), "-o", str(target)])
    assert (result.status, result.stdout, result.stderr) == (0, f"{target}\n", "")
    assert (real / "sub" / "page.html").read_bytes().startswith(b"<!DOCTYPE html>")
    _no_temp_files(real / "sub")


def test_a_folder_that_is_a_link_to_nothing_is_refused(
    profile: Path, tmp_path: Path, victim: Path
) -> None:
    link = tmp_path / "gone"
    link.symlink_to(victim / "made")
    target = link / "sub" / "page.html"
    _refused([str(profile), "-o", str(target)], target, f"{link} is a symbolic link to nothing")
    _untouched(victim)


def test_a_name_of_255_bytes_is_written(profile: Path, tmp_path: Path) -> None:
    """The temporary file beside it must not need a longer name than the page's own."""
    target = tmp_path / ("p" * 250 + ".html")
    result = invoke(["profile", "report", str(profile), "-o", str(target)])
    assert (result.status, result.stderr) == (0, "")
    assert target.read_bytes().startswith(b"<!DOCTYPE html>")
    _no_temp_files(tmp_path)


# --- point names -----------------------------------------------------------------------------


@pytest.fixture
def sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished sweep of two points, its page (ours) written by the sweep."""
    from libreyolo.sweep.report import write_report

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # no chart: not what is tested
    root = tmp_path / "sweep"
    make_point(root, 1, 64, 50.0)
    make_point(root, 2, 64, 80.0)
    write_report(root)
    monkeypatch.undo()
    return root


def _rename_point(root: Path, old: str, new: str) -> None:
    """`sweep.json` with point `old` named `new` (the file as an editor would leave it)."""
    record = json.loads((root / "sweep.json").read_text(encoding="utf-8"))
    record["points"][new] = record["points"].pop(old)
    record["recommended"] = {k: new if v == old else v for k, v in record["recommended"].items()}
    (root / "sweep.json").write_text(json.dumps(record), encoding="utf-8")


def test_a_megabyte_point_name_exits_1_and_leaves_the_page(sweep: Path) -> None:
    page = sweep / "sweep.html"
    before = page.read_bytes()
    _rename_point(sweep, "b1_s64_amp1", "x" * (1 << 20))
    result = invoke(["profile", "report", str(sweep)])
    assert result.status == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "points has a name of 1048576 characters (at most 4096)" in result.stderr
    assert page.read_bytes() == before
    _no_temp_files(sweep)


def test_the_longest_point_name_is_exact_in_the_data_and_cut_in_headings(sweep: Path) -> None:
    name = "n" * (MAX_NAME_CHARS - 1) + "Z"
    _rename_point(sweep, "b2_s64_amp1", name)
    result = invoke(["profile", "report", str(sweep)])
    assert (result.status, result.stderr) == (0, "")
    html = (sweep / "sweep.html").read_text(encoding="utf-8")
    assert html.endswith("</html>\n") and len(html) < 200_000
    assert name in json.loads(_attribute(html, "data-points"))
    summaries = [s for s in html.split("<summary>")[1:] if "Z" in s.split("</summary>")[0]]
    assert summaries and all("…" in s.split("</summary>")[0] for s in summaries)


def _attribute(html: str, name: str) -> str:
    from html import unescape

    start = html.index(f'{name}="') + len(name) + 2
    return unescape(html[start : html.index('"', start)])


@pytest.mark.parametrize("field", ["name", "verdict"])
def test_a_lone_surrogate_is_shown_escaped(sweep: Path, field: str) -> None:
    """JSON may spell a lone surrogate (`\\ud800`), which has no UTF-8 form."""
    if field == "name":
        _rename_point(sweep, "b2_s64_amp1", "b2\ud800x")
    else:
        record = json.loads((sweep / "sweep.json").read_text(encoding="utf-8"))
        record["points"]["b2_s64_amp1"]["verdict"] = "odd \ud800 verdict"
        (sweep / "sweep.json").write_text(json.dumps(record), encoding="utf-8")
    result = invoke(["profile", "report", str(sweep)])
    assert (result.status, result.stderr) == (0, "")
    html = (sweep / "sweep.html").read_bytes().decode("utf-8")  # strict: valid UTF-8
    assert "\\ud800" in html and html.endswith("</html>\n")


# --- a huge batch search ---------------------------------------------------------------------

NUM_SERIES = 4096  # tune.json's limit


def _huge_tune_sweep(root: Path) -> int:
    """The knee search's sweep with its tune.json grown to NUM_SERIES series of three times
    the first series' path (about 19 MB); the file's size."""
    record = knee_record()
    write_tune_sweep(root, record)
    data: Any = to_plain(record)
    first = data["series"][0]
    grown = dict(first, path=first["path"] * 3)
    extra = [dict(grown, imgsz=1000 + k) for k in range(NUM_SERIES - 2)]
    data["series"] = [grown, data["series"][1], *extra]
    data["num_points"] = sum(len(s["path"]) for s in data["series"])
    text = json.dumps(data)
    (root / TUNE_FILE).write_text(text, encoding="utf-8")
    return len(text)


def test_a_huge_batch_search_is_drawn_up_to_a_budget_with_a_note(tmp_path: Path) -> None:
    root = tmp_path / "sweep"
    assert _huge_tune_sweep(root) > 15_000_000
    page = tmp_path / "page.html"
    # The peak is VmHWM reset at the start: ru_maxrss keeps what the forked child inherited
    # from this (large) test process across its exec.
    code = (
        "import re, sys\nfrom pathlib import Path\n"
        "Path('/proc/self/clear_refs').write_text('5')\n"
        "from libreyolo.cli.main import main\n"
        f"status = main(['profile', 'report', {str(root)!r}, '-o', {str(page)!r}])\n"
        "status_text = Path('/proc/self/status').read_text()\n"
        "print(re.search(r'VmHWM:\\s+(\\d+) kB', status_text).group(1))\nsys.exit(status)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    rss_kib = int(proc.stdout.split()[-1])
    assert rss_kib < 512 * 1024  # loose: the uncut page took ~650 MB
    assert page.stat().st_size < tune_charts.SEARCH_CHARS * 2
    html = page.read_text(encoding="utf-8")
    shown = html.count("<summary>The measured path</summary>")
    assert 2 <= shown < NUM_SERIES
    assert f"{shown} of {NUM_SERIES} series shown" in html
    assert "Recommended batch" in html  # the first series, the answer's, is drawn


def test_a_real_search_is_drawn_whole_without_a_note(tmp_path: Path) -> None:
    root = write_tune_sweep(tmp_path / "sweep", knee_record())
    result = invoke(["profile", "report", str(root), "-o", str(tmp_path / "page.html")])
    assert (result.status, result.stderr) == (0, "")
    html = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert html.count("<summary>The measured path</summary>") == 2
    assert "series shown" not in html
