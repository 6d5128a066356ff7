"""Fill the manual's example outputs by running them: every fenced `text` block of `docs/*.md`
whose first line is `$ libreyolo profile ...` gets that command's real stdout, run from the
repository root on the committed files it names (`tests/fixtures/...`).

The tests under `tests/docs/` run the same commands and fail when a block differs, so an
output shown in the manual is what the reader prints today.

    python scripts/gen_docs_examples.py           # rewrite the blocks
    python scripts/gen_docs_examples.py --check   # exit 1 when one is stale
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "$ "
_BLOCK = re.compile(r"^```text\n(\$ libreyolo profile [^\n]*)\n(.*?)^```$", re.M | re.S)
# What the examples run under: a fixed width and no colour, so the output is the same anywhere.
EXAMPLE_ENV = {"COLUMNS": "100", "NO_COLOR": "1"}


@dataclass(frozen=True)
class Example:
    page: Path
    command: str  # as shown, after the prompt
    shown: str  # the output the page holds

    def argv(self) -> list[str]:
        words = shlex.split(self.command)
        assert words[:2] == ["libreyolo", "profile"], self.command
        return [sys.executable, "-m", "libreyolo", *words[1:]]


def examples(pages: list[Path] | None = None) -> list[Example]:
    found = []
    for page in pages or sorted((ROOT / "docs").glob("*.md")):
        for match in _BLOCK.finditer(page.read_text(encoding="utf-8")):
            command = match.group(1).removeprefix(PROMPT)
            found.append(Example(page, command, match.group(2)))
    return found


def run(example: Example) -> str:
    """The command's stdout (it must exit 0 or, for a gate, 4), as the page should show it."""
    env = {**os.environ, **EXAMPLE_ENV}
    done = subprocess.run(
        example.argv(), cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, 4):
        raise RuntimeError(f"{example.command}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def rewrite(page: Path) -> None:
    text = page.read_text(encoding="utf-8")

    def fill(match: re.Match[str]) -> str:
        example = Example(page, match.group(1).removeprefix(PROMPT), match.group(2))
        return f"```text\n{match.group(1)}\n{run(example)}```"

    page.write_text(_BLOCK.sub(fill, text), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a block is stale")
    args = parser.parse_args()
    if args.check:
        stale = [e for e in examples() if run(e) != e.shown]
        for example in stale:
            print(f"stale: {example.page.name}: {example.command}", file=sys.stderr)
        return 1 if stale else 0
    for page in sorted({e.page for e in examples()}):
        rewrite(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
