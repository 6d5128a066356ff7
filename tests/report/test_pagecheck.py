"""The page checker itself fails where a page is wrong: a shown digit off, a value from another
input, an external reference, an unclosed element."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import invoke
from tests.report import pagecheck


@pytest.fixture
def page_html(reference_v1: Path, tmp_path: Path) -> str:
    out = tmp_path / "r.html"
    assert (
        invoke(
            ["profile", "report", str(reference_v1 / "infer_b1.profile.json"), "-o", str(out)]
        ).status
        == 0
    )
    return out.read_text()


def test_the_real_page_passes(page_html: str) -> None:
    assert pagecheck.check_numbers(pagecheck.parse(page_html)) > 10


def test_a_shown_number_off_by_one_digit_fails(page_html: str) -> None:
    match = re.search(r'(data-src="[^"]*step_ms[^"]*">)([0-9.]+)(</data>)', page_html)
    assert match is not None
    shown = match.group(2)
    digits = len(shown.split(".")[1]) if "." in shown else 0
    wrong = f"{float(shown) + 10**-digits:.{digits}f}"
    tampered = page_html.replace(match.group(0), match.group(1) + wrong + match.group(3), 1)
    with pytest.raises(AssertionError, match="shows"):
        pagecheck.check_numbers(pagecheck.parse(tampered))


def test_a_value_read_from_another_input_fails(page_html: str, reference_v1: Path) -> None:
    other = str(reference_v1 / "infer_b4.profile.json")
    tampered = re.sub(
        r'<main data-input="[^"]*"', f'<main data-input="[&quot;{other}&quot;]"', page_html
    )
    with pytest.raises(AssertionError):
        pagecheck.check_numbers(pagecheck.parse(tampered))


@pytest.mark.parametrize(
    "snippet",
    [
        '<img src="https://cdn.example/x.png">',
        '<a href="//example.com">x</a>',
        '<div style="background:url(x.png)"></div>',
        "<style>@import 'x.css';</style>",
    ],
)
def test_external_references_are_found(page_html: str, snippet: str) -> None:
    page = pagecheck.parse(page_html.replace("</footer>", snippet + "</footer>"))
    assert page.external


def test_an_unclosed_element_fails(page_html: str) -> None:
    with pytest.raises(AssertionError):
        pagecheck.parse(page_html.replace("</footer>", "<div></footer>"))
