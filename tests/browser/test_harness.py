"""The browser harness itself: on tiny pages, it sees errors, requests, the DOM and pixels.

Must not: reach the network (every host fails at once in the harness's Chromium).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from PIL import Image

from tests.browser.cdp import Browser, CdpError, find_chromium, live_processes
from tests.browser.conftest import MISSING

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DOT = "data:image/gif;base64,R0lGODlhAQABAIAAAAUEBAAAACwAAAAAAQABAAACAkQBADs="


def _page(tmp_path: Path, body: str, name: str = "page.html") -> Path:
    path = tmp_path / name
    path.write_text(f"<!doctype html><html><head><meta charset=utf-8></head><body>{body}</body>")
    return path


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_a_clean_page_has_no_errors_and_evaluates(browser: Browser, tmp_path: Path) -> None:
    path = _page(tmp_path, f"<svg><rect/><rect/><rect/></svg><img src='{DOT}'>")
    with browser.open(path) as page:
        assert page.console_errors == []
        assert page.evaluate("document.querySelectorAll('svg rect').length") == 3
        assert page.evaluate("Promise.resolve(6 * 7)") == 42
        assert page.requests[0] == path.resolve().as_uri()
        assert all(url.startswith("data:") for url in page.requests[1:])


def test_console_error_and_uncaught_exception_are_caught(browser: Browser, tmp_path: Path) -> None:
    logged = _page(tmp_path, "<script>console.error('x')</script>", "logged.html")
    with browser.open(logged) as page:
        assert page.console_errors == ["console.error: x"]
    thrown = _page(tmp_path, "<script>throw new Error('boom')</script>", "thrown.html")
    with browser.open(thrown) as page:
        assert len(page.console_errors) == 1
        assert "boom" in page.console_errors[0]


def test_a_remote_image_is_recorded_and_fails(browser: Browser, tmp_path: Path) -> None:
    path = _page(tmp_path, "<img src='http://example.invalid/a.png'>")
    with browser.open(path) as page:
        assert page.requests == [path.resolve().as_uri(), "http://example.invalid/a.png"]
        assert any("example.invalid/a.png" in error for error in page.console_errors)


def test_javascript_off_runs_no_script_but_counts(browser: Browser, tmp_path: Path) -> None:
    script = (
        "<p>static</p><script>document.body.insertAdjacentHTML('beforeend', '<p id=js>')</script>"
    )
    path = _page(tmp_path, script)
    with browser.open(path, javascript=False) as page:
        assert page.count("p") == 1
        assert page.count("#js") == 0
    with browser.open(path) as page:
        assert page.count("p") == 2
        assert page.count("#js") == 1


def test_a_failing_evaluate_raises(browser: Browser, tmp_path: Path) -> None:
    with browser.open(_page(tmp_path, "")) as page, pytest.raises(CdpError, match="nothing_here"):
        page.evaluate("nothing_here.x")


def test_screenshots_match_the_viewport_and_show_the_page(browser: Browser, tmp_path: Path) -> None:
    tall = "<div style='height:2000px;background:linear-gradient(#fff,#c00)'></div>"
    with browser.open(_page(tmp_path, tall), width=800, height=600) as page:
        page.screenshot(tmp_path / "full.png")
        page.screenshot(tmp_path / "view.png", full_page=False)
    full_width, full_height = _png_size(tmp_path / "full.png")
    assert full_width == 800
    assert full_height >= 2000
    assert _png_size(tmp_path / "view.png") == (800, 600)
    with Image.open(tmp_path / "full.png") as image:
        assert image.convert("RGB").getcolors(maxcolors=1) is None  # more than one colour


def test_a_wait_that_never_ends_times_out(browser: Browser) -> None:
    with pytest.raises(CdpError, match="timed out waiting for nothing"):
        browser.wait_for(lambda: False, "nothing", timeout_s=0.2)


def test_closing_leaves_no_process_and_no_profile() -> None:
    executable = find_chromium()
    assert executable is not None, MISSING
    with Browser(executable) as own:
        pid, folder = own._proc.pid, own._folder
        assert (folder / "profile").is_dir()
    assert live_processes(pid, str(folder)) == []
    assert not folder.exists()
