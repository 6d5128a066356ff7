"""The Markdown files lead only to what the repository holds: every relative link resolves (a
`#heading` too), and every repository path a document names in backticks exists.

A clone has nothing beside it, so a link to a document kept elsewhere, a renamed heading or a
module that moved is a dead end for its reader.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted(
    {
        ROOT / "README.md",
        *ROOT.glob("docs/**/*.md"),
        *ROOT.glob("conf/**/*.md"),
        *ROOT.glob("libreyolo/**/*.md"),
    }
)
# A doc linked before it is added, by another branch of the same change; checked like any other
# link once it exists (and then it must leave this set).
PENDING: frozenset[str] = frozenset()

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]+`")
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
# Backticked repository paths: a top-level folder of the repository, or a package of
# `libreyolo/` (the documents name modules as `cli/main.py`), then a path without placeholders.
_TOP = ("libreyolo", "tests", "scripts", "docs", "conf", ".ci")
_PACKAGES = tuple(p.name for p in (ROOT / "libreyolo").iterdir() if (p / "__init__.py").is_file())
_PATH = re.compile(rf"^(?:{'|'.join(map(re.escape, _TOP + _PACKAGES))})/[\w./-]*$")


def _prose(text: str) -> str:
    """`text` without fenced code blocks: a link or heading inside one is an example."""
    return _FENCE.sub("", text)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to `-`."""
    text = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file (a repeated heading gets `-1`, `-2`, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for heading in _HEADING.findall(_prose(path.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[str]:
    """The link targets of a Markdown file, outside code."""
    return _LINK.findall(_CODE_SPAN.sub("", _prose(path.read_text(encoding="utf-8"))))


def broken_link(document: Path, target: str) -> str | None:
    """Why `target`, linked from `document`, leads nowhere; None when it resolves."""
    if _SCHEME.match(target):
        return None  # a web address: not the repository's business
    file_part, _, anchor = target.partition("#")
    resolved = (document.parent / file_part).resolve() if file_part else document
    relative = resolved.relative_to(ROOT).as_posix() if resolved.is_relative_to(ROOT) else None
    if relative is None:
        return f"{target} leads outside the repository"
    if not resolved.exists():
        return None if relative in PENDING else f"{target}: no {relative}"
    if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
        return f"{target}: no heading #{anchor} in {relative}"
    return None


def named_paths(path: Path) -> list[str]:
    """Repository paths a document names in backticks (an object after `:` is dropped)."""
    found = []
    for span in _CODE_SPAN.findall(path.read_text(encoding="utf-8")):
        text = re.split(r"::?", span.strip("`"), maxsplit=1)[0]
        if _PATH.match(text):
            found.append(text)
    return found


def _exists(name: str) -> bool:
    clean = name.rstrip("/")
    return any((base / clean).exists() for base in (ROOT, ROOT / "libreyolo")) or name in PENDING


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(document: Path) -> None:
    problems = [why for target in links(document) if (why := broken_link(document, target))]
    assert problems == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_repository_path_named_exists(document: Path) -> None:
    assert [name for name in named_paths(document) if not _exists(name)] == []


def test_pending_links_are_not_yet_in_the_repository() -> None:
    # Once a pending file lands, it is checked like every other link: empty the set.
    assert [name for name in PENDING if (ROOT / name).exists()] == []


def test_checks_find_what_they_look_for(tmp_path: Path) -> None:
    page = ROOT / "docs" / "profile-format.md"
    assert "json-schema" in anchors(page) and "samples-and-stepsample" in anchors(page)
    assert broken_link(page, "#json-schema") is None
    assert broken_link(page, "#no-such-heading") == (
        "#no-such-heading: no heading #no-such-heading in docs/profile-format.md"
    )
    assert broken_link(page, "design-notes.md") == "design-notes.md: no docs/design-notes.md"
    assert broken_link(page, "../../elsewhere/docs/x.md") == (
        "../../elsewhere/docs/x.md leads outside the repository"
    )
    assert broken_link(page, "https://example.org/x.md") is None
    note = tmp_path / "n.md"
    note.write_text(
        "See [a](a.md#b) and `cli/main.py:main`, `libreyolo/nope.py`, `<project>/infer/`.\n"
        "```\n[not a link](missing.md)\n```\n",
        encoding="utf-8",
    )
    assert links(note) == ["a.md#b"]
    assert named_paths(note) == ["cli/main.py", "libreyolo/nope.py"]
    assert [_exists(name) for name in named_paths(note)] == [True, False]
