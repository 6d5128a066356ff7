"""Write docs/cli.md, the command reference, from the code itself: every subcommand's usage and
every flag with its help and default (the argparse tree `libreyolo` parses with), then every
config key `libreyolo-sweep` and config files set, with its type, default and the schema's own
words (`libreyolo/config/schema.py`), so the manual cannot drift from the code (a test under
`tests/docs/` fails when the file is stale).

    python scripts/gen_cli_reference.py           # rewrite docs/cli.md
    python scripts/gen_cli_reference.py --check   # exit 1 when docs/cli.md is stale
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import os
import sys
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from libreyolo.cli.parser import SUBCOMMANDS, build_parser  # noqa: E402
from libreyolo.config import schema  # noqa: E402
from libreyolo.config.overrides import FLAG_KEYS  # noqa: E402

TARGET = ROOT / "docs" / "cli.md"
HEADER = """\
# Command reference

Generated from the parser and the config schema by `scripts/gen_cli_reference.py`; do not edit
by hand. Every subcommand also prints its part with `libreyolo profile <subcommand> --help`.
Flags are POSIX (`--batch 16`, never `batch=16`) and never abbreviated; the `key=value` words
of `libreyolo-sweep` and config files are the [config keys](#config-keys) below, and
[Sweep and tune](sweep.md) shows them at work.

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


CONFIG_HEADER = """\
## Config keys

What `libreyolo-sweep key=value` overrides and config files (`--config-dir`, `+experiment=`)
set: every key of the composed config, with its type, the schema's default and its words
(`libreyolo/config/schema.py`). The `mode` group sets `infer`'s own batch, input size and
warmup over these defaults; the flags of `run` and `infer` above set the same keys.
"""


def _field_comments(cls: type) -> dict[str, str]:
    """Each field's comment in the schema's source: the one on its line, or the block of
    comment lines right above it."""
    lines, _ = inspect.getsourcelines(cls)  # a module-level class: parses as it stands
    tree = ast.parse("".join(lines))
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef)).body
    found = {}
    for node in body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        index = node.lineno - 1
        own = lines[index].partition("  # ")[2].strip()
        above = []
        while index > 0 and lines[index - 1].strip().startswith("#"):
            index -= 1
            above.insert(0, lines[index].strip().lstrip("#").strip())
        found[node.target.id] = own or " ".join(above)
    return found


def _type_name(hint: object) -> str:
    text = getattr(hint, "__name__", None) if not typing.get_args(hint) else None
    text = text or str(hint).replace("typing.", "").replace("libreyolo.config.schema.", "")
    return text.replace("|", "or")


def _flags_by_key(commands: dict[str, argparse.ArgumentParser]) -> dict[str, str]:
    """Config key -> the `run`/`infer` flag that sets it, with that flag's help."""
    found: dict[str, str] = {}
    for name in ("run", "infer"):
        for action in commands[name]._actions:
            key = FLAG_KEYS.get(action.dest)
            if key is None or key in found:
                continue
            flag = action.option_strings[0] if action.option_strings else action.dest
            found[key] = f"`{flag}`: {_help_cell(action, commands[name])}"
    return found


def _config_table(cls: type, prefix: str, flags: dict[str, str]) -> list[str]:
    hints = typing.get_type_hints(cls)
    comments = _field_comments(cls)
    rows, nested = [], []
    for item in dataclasses.fields(cls):
        hint = hints[item.name]
        if dataclasses.is_dataclass(hint):
            nested.append((item.name, hint))
            continue
        default = (
            item.default_factory()
            if item.default_factory is not dataclasses.MISSING
            else item.default
        )
        shown = getattr(default, "value", default)
        key = prefix + item.name
        meaning = "; ".join(filter(None, (flags.get(key), comments.get(item.name))))
        meaning = meaning.replace("|", "\\|")
        rows.append(f"| `{prefix}{item.name}` | {_type_name(hint)} | `{shown!r}` | {meaning} |")
    out = []
    if rows:
        title = prefix.rstrip(".") or "top level"
        doc = " ".join((inspect.getdoc(cls) or "").split())
        out += [f"### `{title}`", "", doc, "", "| key | type | default | meaning |"]
        out += ["|---|---|---|---|", *rows, ""]
    for name, child in nested:
        out += _config_table(child, f"{prefix}{name}.", flags)
    return out


def render() -> str:
    os.environ["COLUMNS"] = "1000"  # one usage line, whatever the terminal
    root = build_parser()
    profile = _subparsers(root)["profile"]
    commands = _subparsers(profile)
    out = [HEADER]
    for name, _ in SUBCOMMANDS:
        out += _section(f"libreyolo profile {name}", commands[name])
    out += [CONFIG_HEADER, *_config_table(schema.ProfileConfig, "", _flags_by_key(commands))]
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
