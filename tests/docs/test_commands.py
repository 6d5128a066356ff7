"""Every command the manual and the README show in a `bash` block is checked against the
code it would run: `libreyolo profile ...` by the real parser (subcommand, every flag, every
value's type), `libreyolo-sweep ...` by composing its config as Hydra will (groups, plug-ins,
keys and values; a swept key once per value it takes first), `python scripts/X.py` and
`bash scripts/X.sh` by the script and its flags. Other programs (pip, ray, mlflow, a shell
builtin) are named in `NOT_OURS`: a command of none of these kinds fails the test."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
_BASH = re.compile(r"^```bash\n(.*?)^```$", re.M | re.S)
NOT_OURS = ("pip", "python3", "ray", "mlflow", "source")
HOME = "/home/user"  # `~` as the shell expands it, in a flag's value and after `key=`


@dataclass(frozen=True)
class Command:
    page: str
    words: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.page}: {shlex.join(self.words)}"


def _lines(block: str) -> list[str]:
    """The block's commands: continuation lines joined, `&&` chains split."""
    joined = re.sub(r"\\\n", " ", block)
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, "&&"]:
            if word in (">", ">>", "|", "2>"):  # a redirection or pipe: the command ends here
                command.append("\0")
            elif word == "&&":
                if command:
                    commands.append(command[: command.index("\0")] if "\0" in command else command)
                command = []
            elif "\0" not in command:
                command.append(word)
    return [shlex.join(c) for c in commands]


def _expand(word: str) -> str:
    if word.startswith("~/"):
        return HOME + word[1:]
    key, eq, value = word.partition("=")
    return f"{key}={HOME}{value[1:]}" if eq and value.startswith("~/") else word


def commands() -> list[Command]:
    found = []
    for page in PAGES:
        for block in _BASH.findall(page.read_text(encoding="utf-8")):
            for line in _lines(block):
                words = tuple(_expand(w) for w in shlex.split(line))
                found.append(Command(page.relative_to(ROOT).as_posix(), words))
    return found


def _program(command: Command) -> str:
    return os.path.basename(command.words[0])


COMMANDS = commands()


def _after_module(words: tuple[str, ...]) -> tuple[str, ...]:
    """The words after `-m libreyolo` (torchrun's), else ()."""
    for at in range(len(words) - 1):
        if words[at : at + 2] == ("-m", "libreyolo"):
            return words[at + 2 :]
    return ()


def _kind(command: Command) -> str:
    program, words = _program(command), command.words
    if program == "libreyolo" and words[1:2] == ("profile",):
        return "profile"
    if program == "torchrun" and _after_module(words)[:1] == ("profile",):
        return "profile"  # torchrun ... -m libreyolo profile ...: a world it joins
    if program == "libreyolo-sweep":
        return "sweep"
    if program == "python" and words[1:2] and words[1].startswith("scripts/"):
        return "script"
    if program == "bash" and words[1:2] and words[1].startswith("scripts/"):
        return "script"
    if program == "python" and words[1:3] == ("-m", "pytest"):
        return "pytest"
    if program in NOT_OURS:
        return "not ours"
    return "unknown"


def test_the_pages_show_commands_of_every_kind() -> None:
    kinds = {_kind(c) for c in COMMANDS}
    assert {"profile", "sweep", "script", "pytest", "not ours"} <= kinds
    assert [str(c) for c in COMMANDS if _kind(c) == "unknown"] == []


@pytest.mark.parametrize("command", [c for c in COMMANDS if _kind(c) == "profile"], ids=str)
def test_profile_command_parses(command: Command) -> None:
    from libreyolo.cli.parser import build_parser, reject_key_value

    torchrun = _program(command) == "torchrun"
    words = list(_after_module(command.words) if torchrun else command.words[1:])
    parser = build_parser(words)
    reject_key_value(words, parser)
    args = parser.parse_args(words)
    assert hasattr(args, "handler")


def _run_mode(overrides: list[str]) -> list[str]:
    """The overrides of one job of the sweep: each swept key at the first value it takes."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    single = []
    for text in overrides:
        override = parser.parse_override(text)
        if override.is_sweep_override():
            first = next(iter(override.sweep_string_iterator()))
            text = f"{override.get_key_element()}={first}"
        single.append(text)
    return single


@pytest.mark.parametrize("command", [c for c in COMMANDS if _kind(c) == "sweep"], ids=str)
def test_sweep_command_composes(command: Command) -> None:
    from libreyolo.config.schema import register_schemas
    from libreyolo.sweep.trust import composed_hydra, split_trust_flags

    register_schemas()
    _, argv = split_trust_flags(list(command.words[1:]))
    assert composed_hydra(argv) is not None  # the multirun: groups, plug-ins, the config
    options = [w for w in argv if w.startswith("-")]
    flags_with_values = {"--config-dir", "--config-name", "-cd", "-cn"}
    kept, skip = [], False
    for word in argv:
        if skip:
            kept.append(word)
            skip = False
        elif word in flags_with_values:
            kept.append(word)
            skip = True
        elif word not in ("-m", "--multirun"):
            kept.append(word if word.startswith("-") else "\0" + word)
    plain = [w[1:] if w.startswith("\0") else w for w in kept]
    overrides = [w[1:] for w in kept if w.startswith("\0")]
    head = [w for w in plain if w not in overrides]
    assert composed_hydra([*head, *_run_mode(overrides)]) is not None, options


@pytest.mark.parametrize("command", [c for c in COMMANDS if _kind(c) == "script"], ids=str)
def test_script_command_names_a_script_and_its_flags(command: Command) -> None:
    script = ROOT / command.words[1]
    assert script.is_file()
    source = script.read_text(encoding="utf-8")
    for flag in (w for w in command.words[2:] if w.startswith("--")):
        assert f'"{flag.split("=")[0]}"' in source or flag in source, flag


def test_blocks_split_into_commands() -> None:
    block = (
        "a --x 1 \\\n  --y 2 && b c   # comment\n"
        "libreyolo profile kernels p.json --csv > k.csv\nd key=~/v ~/w\n"
    )
    assert _lines(block) == [
        "a --x 1 --y 2",
        "b c",
        "libreyolo profile kernels p.json --csv",
        "d 'key=~/v' '~/w'",
    ]
    assert [_expand(w) for w in ("key=~/v", "~/w", "a~b")] == [
        f"key={HOME}/v",
        f"{HOME}/w",
        "a~b",
    ]


def test_a_wrong_flag_or_key_is_caught() -> None:
    from libreyolo.cli.parser import build_parser
    from libreyolo.config.compose import ConfigError
    from libreyolo.config.schema import register_schemas
    from libreyolo.errors import UsageError
    from libreyolo.sweep.trust import composed_hydra

    with pytest.raises(UsageError, match="--batchsize"):
        words = ["profile", "run", "synthetic", "--batchsize", "4"]
        build_parser(words).parse_args(words)
    register_schemas()
    with pytest.raises(ConfigError, match="batchsize"):
        composed_hydra(_run_mode(["batchsize=1,2"]))
