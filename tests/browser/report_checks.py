"""What every report page must show in a real browser: no console error, nothing loaded but
the page itself, every chart mark drawn at a height proportional to its value, the same
content with JavaScript off, and a screenshot (kept under $LIBREYOLO_SCREENSHOTS when set,
which is how README's pictures are made)."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from PIL import Image

from tests.browser.cdp import Browser, Page
from tests.report import pagecheck

# Every chart mark as drawn: chart, element, value, box width, height and centre y (px), the
# index of its <svg> (one scale each) and whether that svg is shown (not in a closed <details>).
MARKS_JS = """(() => {
  const svgs = Array.from(document.querySelectorAll('svg'));
  return Array.from(document.querySelectorAll('svg [data-mark]')).map((e) => {
    const r = e.getBoundingClientRect(), svg = e.closest('svg');
    return [e.getAttribute('data-mark'), e.tagName, parseFloat(e.getAttribute('data-value')),
            r.width, r.height, r.top + r.height / 2, svgs.indexOf(svg),
            svg.getBoundingClientRect().height > 0];
  });
})()"""
MIN_PX = 20  # bars shorter than this are left out of the proportionality check (1 px rounding)


def _spread(ratios: list[float]) -> float:
    return (max(ratios) - min(ratios)) / max(ratios) if ratios else 0.0


def _proportional(rows: list[list[Any]]) -> bool:
    """Bars: drawn length / value is one number per chart (heights for columns, widths for
    horizontal bars). Points: centre y is a linear function of the value."""
    bars = [r for r in rows if r[1] == "rect" and r[2] > 0]
    if bars:
        heights = [r[4] / r[2] for r in bars if r[4] >= MIN_PX]
        widths = [r[3] / r[2] for r in bars if r[3] >= MIN_PX]
        return min(_spread(heights), _spread(widths)) < 0.08
    points = sorted((r[2], r[5]) for r in rows if r[1] == "circle")
    if len(points) < 3 or points[0][0] == points[-1][0]:
        return True
    (v0, y0), (v1, y1) = points[0], points[-1]
    return all(abs(y0 + (v - v0) * (y1 - y0) / (v1 - v0) - y) <= 1.5 for v, y in points)


def marks_drawn(page: Page) -> dict[str, list[list[Any]]]:
    rows = page.evaluate(MARKS_JS)
    assert isinstance(rows, list)
    charts: dict[str, list[list[Any]]] = {}
    for row in rows:
        charts.setdefault(row[0], []).append(row)
    return charts


def check_page(
    browser: Browser, html: Path, shot_name: str, tmp_path: Path
) -> tuple[pagecheck.Page, dict[str, list[list[Any]]], Path]:
    """Open `html` with and without JavaScript; the parsed page and the marks drawn."""
    parsed = pagecheck.parse(html.read_text(encoding="utf-8"))
    expected = Counter(m.chart for m in parsed.marks)
    with browser.open(html, width=1280, height=1000) as page:
        assert page.console_errors == []
        assert [url for url in page.requests if not url.startswith("data:")] == [html.as_uri()]
        drawn = marks_drawn(page)
        assert {k: len(v) for k, v in drawn.items()} == dict(expected)
        shown: dict[int, list[list[Any]]] = {}
        for rows in drawn.values():
            for row in rows:
                if row[7]:
                    shown.setdefault(row[6], []).append(row)
        assert shown, "no chart is shown"
        for index, rows in shown.items():
            visible = sum(1 for r in rows if r[3] > 0 and r[4] > 0)
            assert visible >= sum(1 for r in rows if r[2] > 0), (rows[0][0], index)
            assert _proportional(rows), (rows[0][0], index)
        sections = page.count("section")
        shot = tmp_path / f"{shot_name}-full.png"
        page.screenshot(shot)
        first_screen = tmp_path / f"{shot_name}.png"  # what README shows: the page as it opens
        page.screenshot(first_screen, full_page=False)
    with browser.open(html, javascript=False) as page:
        assert page.count("section") == sections
        assert page.count("svg [data-mark]") == len(parsed.marks)
        assert page.console_errors == []
    _keep(first_screen)
    return parsed, drawn, shot


def palette_pixels(shot: Path, rgb: tuple[int, int, int]) -> int:
    """How many pixels of the screenshot have exactly this colour (a chart's fill)."""
    with Image.open(shot) as image:
        return sum(1 for pixel in image.convert("RGB").get_flattened_data() if pixel == rgb)


def _keep(shot: Path) -> None:
    folder = os.environ.get("LIBREYOLO_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(folder) / shot.name)
