"""The outputs the manual shows are the readers' output today: each fenced `text` block of
`docs/*.md` that starts `$ libreyolo profile ...` is run again on the committed file it names
and compared line for line (`python scripts/gen_docs_examples.py` rewrites them)."""

from __future__ import annotations

import pytest

from tests.scripts_module import script_module

GEN = script_module("gen_docs_examples")
EXAMPLES = GEN.examples()


def test_the_manual_shows_outputs() -> None:
    shown = {(e.page.name, e.command.split()[2]) for e in EXAMPLES}
    for reader in ("summary", "get", "phases", "ops", "kernels", "what-if", "compare"):
        assert any(command == reader for _, command in shown), reader
    assert all(e.shown.strip() for e in EXAMPLES)  # none left empty


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"{e.page.name}: {e.command}")
def test_example_output_is_current(example: object) -> None:
    assert GEN.run(example) == example.shown  # type: ignore[attr-defined]
