"""Write docs/cli.md, the command reference, from the argparse tree `libreyolo` itself parses
with: every subcommand's usage and every flag with its help and default, so the manual cannot
drift from the code (a test under `tests/docs/` fails when the file is stale).

    python scripts/gen_cli_reference.py           # rewrite docs/cli.md
    python scripts/gen_cli_reference.py --check   # exit 1 when docs/cli.md is stale
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from libreyolo.cli.parser import SUBCOMMANDS, build_parser  # noqa: E402

TARGET = ROOT / "docs" / "cli.md"
HEADER = """\
# Command reference

Generated from the parser by `scripts/gen_cli_reference.py`; do not edit by hand. Every
subcommand also prints this with `libreyolo profile <subcommand> --help`. Flags are POSIX
(`--batch 16`, never `batch=16`) and never abbreviated. The sweep's `key=value` overrides are
documented in [Sweep and tune](sweep.md).

Exit statuses: 0 ok · 1 a file cannot be analysed · 2 a missing file, bad arguments or an
unusable destination · 3 a measurement ended without a profile · 4 a CI gate failed
(`compare --fail-on-regression`) · 130 interrupted · 143 terminated.
"""


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flag_cell(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(f"`{name}`" for name in action.option_strings)
    if action.nargs == 0 or isinstance(action, argparse.BooleanOptionalAction):
        return names
    metavar = action.metavar or action.dest.upper()
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    return f"{names} `{metavar}`"


def _help_cell(action: argparse.Action, parser: argparse.ArgumentParser) -> str:
    text = (action.help or "") % {"default": action.default, "prog": parser.prog}
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        text += " (one of: " + ", ".join(f"`{c}`" for c in action.choices) + ")"
    return " ".join(text.split()).replace("|", "\\|")


def _section(name: str, parser: argparse.ArgumentParser) -> list[str]:
    usage = " ".join(parser.format_usage().removeprefix("usage: ").split())
    lines = [f"## `{name}`", "", parser.description or "", "", "```text", usage, "```", ""]
    lines += ["| argument | meaning |", "|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        lines.append(f"| {_flag_cell(action)} | {_help_cell(action, parser)} |")
    return [*lines, ""]


def render() -> str:
    os.environ["COLUMNS"] = "1000"  # one usage line, whatever the terminal
    root = build_parser()
    profile = _subparsers(root)["profile"]
    commands = _subparsers(profile)
    out = [HEADER]
    for name, _ in SUBCOMMANDS:
        out += _section(f"libreyolo profile {name}", commands[name])
    return "\n".join(out).rstrip("\n") + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/cli.md is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print("docs/cli.md is stale: run python scripts/gen_cli_reference.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
