"""Checks every report page must pass: each number shown equals what a reader prints under
`--json` for the same input, every chart mark that names a reader value draws that value, and
nothing on the page points outside it.

A page's numbers are `<data value=… data-src='["reader", key, …]'>shown</data>`; the reader's
inputs are those of the nearest element with `data-input`. The reader is run in-process
(`libreyolo profile <reader> <inputs…> --json`) once per (reader, inputs).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from tests.conftest import invoke

VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}
URL_ATTRS = {
    "href",
    "src",
    "srcset",
    "action",
    "formaction",
    "poster",
    "data",
    "xlink:href",
    "background",
    "cite",
    "longdesc",
    "manifest",
    "ping",
    "xmlns",
}
EXTERNAL = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)
CSS_URL = re.compile(r"url\(|@import", re.IGNORECASE)


@dataclass
class Number:
    src: list[Any]
    inputs: list[str]
    value: float
    shown: str
    scale: float


@dataclass
class Mark:
    chart: str
    value: float
    src: list[Any] | None
    inputs: list[str]


class Page(HTMLParser):
    """A parsed page: its numbers, chart marks, external references and text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.numbers: list[Number] = []
        self.marks: list[Mark] = []
        self.external: list[str] = []
        self.text: list[str] = []
        self._scopes: list[list[str]] = [[]]
        self._open: list[str] = []
        self._number: dict[str, Any] | None = None
        self._in_style_or_script = False

    def _start(self, tag: str, attrs: list[tuple[str, str | None]], closes: bool) -> None:
        a = {k: v or "" for k, v in attrs}
        for key, value in a.items():
            if key in URL_ATTRS and EXTERNAL.match(value) and not value.startswith("#"):
                self.external.append(f"{tag} {key}={value}")
            if key == "style" and CSS_URL.search(value):
                self.external.append(f"{tag} style={value}")
        inputs = json.loads(a["data-input"]) if "data-input" in a else self._scopes[-1]
        if tag == "data" and "data-src" in a:
            self._number = {
                "src": json.loads(a["data-src"]),
                "value": float(a["value"]),
                "scale": float(a.get("data-scale", "1")),
                "inputs": inputs,
                "text": "",
            }
        if "mark" in a.get("class", "").split():
            src = json.loads(a["data-src"]) if "data-src" in a else None
            self.marks.append(Mark(a["data-mark"], float(a["data-value"]), src, inputs))
        if tag in ("style", "script"):
            self._in_style_or_script = True
        if not closes and tag not in VOID:
            self._open.append(tag)
            self._scopes.append(inputs)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, closes=False)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, closes=True)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self._open and self._open[-1] == tag, f"</{tag}> closes <{self._open[-1:]}>"
        self._open.pop()
        self._scopes.pop()
        if tag == "data" and self._number is not None:
            n = self._number
            self.numbers.append(Number(n["src"], n["inputs"], n["value"], n["text"], n["scale"]))
            self._number = None
        if tag in ("style", "script"):
            self._in_style_or_script = False

    def handle_data(self, data: str) -> None:
        if self._in_style_or_script:
            if CSS_URL.search(data) or re.search(r"https?://", data):
                self.external.append(f"inline code: {data[:80]}")
            return
        if self._number is not None:
            self._number["text"] += data
        self.text.append(data)


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    assert not page._open, f"unclosed elements: {page._open}"
    return page


def _decimals(value: float) -> int:
    text = repr(value)
    if "e" in text or "E" in text:
        return 12
    return len(text.split(".")[1]) if "." in text else 0


def _lookup(doc: Any, path: list[Any]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


class Readers:
    """`libreyolo profile <reader> <inputs> --json`, run once per (reader, inputs)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, tuple[str, ...]], Any] = {}

    def json(self, reader: str, inputs: list[str]) -> Any:
        key = (reader, tuple(inputs))
        if key not in self._cache:
            result = invoke(["profile", reader, *inputs, "--json"])
            assert result.status in (0, 4), f"{reader} {inputs}: {result.stderr}"
            self._cache[key] = json.loads(result.stdout)
        return self._cache[key]

    def value(self, src: list[Any], inputs: list[str]) -> Any:
        return _lookup(self.json(src[0], inputs), src[1:])


def _close_to_json(raw: float, expected: float) -> bool:
    """`raw` (the page's unrounded value) within the rounding `--json` applied to `expected`."""
    tolerance = 0.5 * 10 ** -min(_decimals(expected), 12) + 1e-9 * abs(expected)
    return abs(raw - expected) <= tolerance


def _display_slack(expected: float, scale: float, digits: int) -> float:
    """How far a number shown to `digits` decimals may lie from the JSON value × scale: nothing
    when both are rounded to the same decimals (they round the same value), else the two
    roundings' half units."""
    json_digits = max(_decimals(expected) - round(math.log10(scale)), 0)
    if json_digits == digits:
        return 0.0
    return 0.5 * 10**-digits + 0.5 * 10**-json_digits


def check_numbers(page: Page, readers: Readers | None = None) -> int:
    """Assert every number and mark with a source equals the reader's value; return how many
    were checked."""
    readers = readers or Readers()
    for n in page.numbers:
        expected = readers.value(n.src, n.inputs)
        assert isinstance(expected, int | float) and not isinstance(expected, bool), (n, expected)
        assert _close_to_json(n.value, float(expected)), f"{n.src}: page {n.value}, json {expected}"
        shown = float(n.shown.replace(",", ""))
        digits = len(n.shown.split(".")[1]) if "." in n.shown else 0
        scaled = float(expected) * n.scale
        assert abs(shown - scaled) <= _display_slack(float(expected), n.scale, digits) + 1e-9, (
            f"{n.src}: shows {n.shown}, json {expected}"
        )
    for m in page.marks:
        if m.src is None:
            continue
        expected = readers.value(m.src, m.inputs)
        assert _close_to_json(m.value, float(expected)), f"mark {m.src}: {m.value} vs {expected}"
    return len(page.numbers) + sum(1 for m in page.marks if m.src is not None)


def marks(page: Page, chart: str) -> list[Mark]:
    return [m for m in page.marks if m.chart == chart]


def plain_text(page: Page) -> str:
    return " ".join(" ".join(page.text).split())
