"""`--help` of `libreyolo`, `libreyolo profile` and every subcommand, pinned: the parser builds
only the subcommand being run, and each page must read as it did when the whole tree was built."""

from __future__ import annotations

import pytest

from libreyolo.cli.parser import SUBCOMMANDS
from tests.conftest import invoke

PAGES = {
    "libreyolo": ["--help"],
    "profile": ["profile", "--help"],
    **{name: ["profile", name, "--help"] for name, _ in SUBCOMMANDS},
}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_help_page_matches_golden(page: str, golden, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps help at the terminal's width
    result = invoke(PAGES[page])
    assert (result.status, result.stderr) == (0, "")
    golden(f"help/{page}.txt", result.stdout)
