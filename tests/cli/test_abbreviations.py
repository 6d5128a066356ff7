"""No flag is taken by a prefix: `--war 3` is refused (exit 2, one line), never read as
`--warmup 3` and then dropped by the experiment file's typed-flag rule; what counts as typed is
argparse's own reading of the words, whatever their spelling."""

from __future__ import annotations

import argparse
from pathlib import Path

from libreyolo.cli.parser import build_parser, typed_dests
from libreyolo.document.files import save
from tests.conftest import invoke
from tests.profiles import training_profile

CONF = str(Path(__file__).resolve().parents[2] / "conf")
# conf/infer_latency_fp16.yaml: the `long` window (warmup 20, runs 500), half on
EXPERIMENT = ["profile", "infer", "--config-dir", CONF, "--config", "infer_latency_fp16"]


def _config(*extra: str) -> dict[str, object]:
    result = invoke([*EXPERIMENT, *extra, "--print-config", "--json"])
    assert result.status == 0, result.stderr
    config = result.json()
    assert isinstance(config, dict)
    return config


def test_an_abbreviated_flag_with_an_experiment_file_is_refused_not_dropped() -> None:
    result = invoke([*EXPERIMENT, "--war", "3", "--print-config"])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == "libreyolo: unrecognized arguments: --war (see 'libreyolo --help')\n"


def test_the_full_spelling_with_an_experiment_file_is_applied() -> None:
    assert _config("--warmup", "3")["window"] == {
        "warmup": 3,
        "steps": 100,
        "runs": 500,
        "repeat": 3,
        "repeat_in_process": False,
    }
    assert _config("--warmup=4")["window"]["warmup"] == 4  # type: ignore[index]


def test_a_positional_that_looks_like_a_flag_is_not_a_typed_flag() -> None:
    # After `--`, "--runs" is the source: the file's runs (500) stand, not the default 100.
    result = invoke([*EXPERIMENT, "--print-config", "--json", "--", "--runs"])
    assert result.status == 0, result.stderr
    config = result.json()
    assert isinstance(config, dict) and config["source"] == "--runs"
    assert config["window"]["runs"] == 500


def test_an_abbreviation_on_a_reader_is_refused(tmp_path: Path) -> None:
    path = save(training_profile("cpu"), tmp_path / "p.json")
    assert invoke(["profile", "summary", str(path), "--json"]).status == 0
    result = invoke(["profile", "summary", str(path), "--js"])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == "libreyolo: unrecognized arguments: --js (see 'libreyolo --help')\n"


def test_no_parser_in_the_tree_takes_abbreviations() -> None:
    seen: list[str] = []

    def walk(parser: argparse.ArgumentParser) -> None:
        assert parser.allow_abbrev is False, parser.prog
        seen.append(parser.prog)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    walk(child)

    walk(build_parser())
    assert "libreyolo profile infer" in seen and "libreyolo profile what-if" in seen
    assert len(seen) == 14  # libreyolo, profile and its twelve subcommands


def test_typed_dests_are_what_the_words_set_and_nothing_else() -> None:
    words = [*EXPERIMENT, "--warmup=3", "--no-trace", "--batch", "2"]
    assert typed_dests(words) == {
        "group",
        "subcommand",
        "config_dir",
        "config",
        "warmup",
        "trace",
        "batch",
    }
    assert typed_dests(["profile", "run", "coco128"]) == {"group", "subcommand", "data"}
