"""The code explains itself: no comment or document cites a document outside the repository.

The design notes this project was written from (house style, Hydra notes, profiler definitions,
workload notes, the 1.6.0 reference, field notes) are not in the repository, so a clone cannot
follow a comment that points at "section 4.4 of the Hydra notes". A comment says the fact it
relies on; a longer story goes into `docs/` and is linked. A `docs/...` path named in the code
must exist too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("libreyolo", "scripts", "tests", "conf", "docs", ".ci")
TOP_FILES = ("README.md", "pyproject.toml")
# Where a `docs/...` name must exist: the code. (Tests hold made-up names on purpose, and the
# links of the Markdown files are tests/test_docs_links.py's.)
CODE = ("libreyolo/", "scripts/", "conf/", ".ci/", "pyproject.toml")
# Written as fragments so that this file does not match its own pattern.
OUTSIDE = re.compile(
    "|".join(
        (
            "house" + "-style",
            "reference" + "-behaviour",
            "profiler" + "-definitions",
            "workload" + "-notes",
            "hydra" + "-notes",
            "field" + "-notes",
            r"\bspec" + "/",
            "\u00a7",  # the section sign: a section number cites some document
        )
    )
)
DOCS_PATH = re.compile(r"\bdocs/[\w./-]*[\w/]")
# Files that still cite, to be mended where another change is under way; each entry must still
# cite (the set only shrinks), and it empties once those changes are merged.
NOT_YET_MENDED: frozenset[str] = frozenset()
# `docs/...` names in the code that lead nowhere yet (errors.py names "docs/README's error
# table"; its fix comes with the exit-status change).
DOCS_NOT_YET_MENDED: frozenset[str] = frozenset()


def text_files() -> dict[str, str]:
    """Relative path -> text of every UTF-8 file scanned (binary files such as JPEGs skipped)."""
    paths = [ROOT / name for name in TOP_FILES]
    for top in SCANNED:
        paths += [p for p in (ROOT / top).rglob("*") if p.is_file()]
    found = {}
    for path in paths:
        if "__pycache__" in path.parts or path.suffix in {".pyc", ".gz"}:
            continue
        try:
            found[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
    return found


def citations(text: str) -> list[str]:
    """The lines of `text` that cite an outside document."""
    return [line.strip() for line in text.splitlines() if OUTSIDE.search(line)]


def missing_docs(text: str) -> list[str]:
    """`docs/...` paths named in `text` that are not in the repository."""
    return [m for m in DOCS_PATH.findall(text) if not (ROOT / m.rstrip("/")).exists()]


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return text_files()


def test_no_file_cites_an_outside_document(files: dict[str, str]) -> None:
    found = {
        path: lines
        for path, text in files.items()
        if path not in NOT_YET_MENDED and (lines := citations(text))
    }
    assert found == {}


def test_files_not_yet_mended_still_cite(files: dict[str, str]) -> None:
    # An entry whose file no longer cites (or is gone) must leave the set.
    assert sorted(p for p in NOT_YET_MENDED if not citations(files.get(p, ""))) == []


def test_code_names_only_docs_that_exist(files: dict[str, str]) -> None:
    found = {
        path: names
        for path, text in files.items()
        if path.startswith(CODE)
        and path not in DOCS_NOT_YET_MENDED
        and (names := missing_docs(text))
    }
    assert found == {}
    assert sorted(p for p in DOCS_NOT_YET_MENDED if not missing_docs(files.get(p, ""))) == []


def test_the_patterns_find_what_they_look_for() -> None:
    assert citations("x = 1  # see hydra" + "-notes \u00a74.4\nok\n") == [
        "x = 1  # see hydra" + "-notes \u00a74.4"
    ]
    assert citations("(workload" + "-notes.md)\n(item 18 of \u00a715)\n") == [
        "(workload" + "-notes.md)",
        "(item 18 of \u00a715)",
    ]
    assert citations("the spec's 2 x SE rule; inspect/ and respec/\n") == []
    assert missing_docs("see docs/profile-format.md, or docs/README's table") == ["docs/README"]
    assert "libreyolo/assets/sample.jpg" not in text_files()  # binary: not scanned
