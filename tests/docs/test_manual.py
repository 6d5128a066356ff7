"""The front door and the manual: README.md stays short, the manual builds strictly with
MkDocs, nothing the old README said was lost on the way, and the generated pages are current."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts_module import script_module
from tests.test_docs_links import anchors, slug

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TEST_COMMAND = (
    ".venv/bin/pip install -e '.[dev]' && "
    '.venv/bin/python -m pytest -m "not gpu" -q -p no:cacheprovider'
)
# Every section of the README before the manual existed (786 lines), and where it lives now:
# the page, and a heading of that page (None: the page's title). The page must hold that
# heading and a sentence the old section held, so no section was dropped on the way.
MOVED = {
    "Install and run": ("measure.md", "The first profile", "is kept per machine in"),
    "Profile the trainer you already have: `--trainer`": (
        "trainer.md",
        None,
        "Install this package **beside** it",
    ),
    "Report pages": ("report.md", None, "writes one HTML file that needs no server"),
    "Sweeps": ("sweep.md", None, "is Hydra's multirun over the same config"),
    "Which batch: `hydra/sweeper=tune`": (
        "sweep.md",
        "Which batch: `hydra/sweeper=tune`",
        "Instead of a grid, the tune sweeper searches the batch",
    ),
    "Compare, and compare in CI": ("compare.md", None, "exits 4 when the change is slower"),
    "Results where teams look: CSV, MLflow, TensorBoard": (
        "export.md",
        None,
        "sends a profile, or every point of a sweep, to MLflow",
    ),
    "The workloads: YOLOv9 t/s/m/c and YOLOX n/t/s/m/l/x": (
        "workloads.md",
        None,
        "Our speed-ups are levers, not the default.",
    ),
    "On a GPU": ("measure.md", "On a GPU", "makes GPU N the current device"),
    "How far from the limit: FLOPs, MFU, energy": (
        "efficiency.md",
        None,
        "FLOPs per image** are counted once per",
    ),
    "Which way of running: eager, torch.compile, CUDA graphs, ONNX Runtime": (
        "execution-modes.md",
        None,
        "runs the same window, the same pre- and postprocessing",
    ),
    "How far to trust it": ("trust.md", None, "planted bottlenecks, measured end to end"),
    "Test": ("contributing.md", "Test", "The tests of `--trainer` run libreyolo 1.6.0 itself"),
    "Documents": ("index.md", "Files and internals", "the metric catalogue `get` reads"),
    "Limits and hostile input": ("limits.md", None, "Readers take regular files or `-` only"),
    "Benchmarks": ("benchmarks.md", None, "measures both sides in one run"),
}


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_readme_is_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150
    first_screen = "\n".join(lines[:40])
    assert TEST_COMMAND in first_screen
    assert ".venv/bin/pip install -e . && .venv/bin/libreyolo profile infer" in first_screen
    # the test command CI runs is the one README shows
    assert TEST_COMMAND in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # nothing dated, no benchmark journal
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", "\n".join(lines))
    assert "rounds" not in "\n".join(lines)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_old_section_has_a_home(old: str) -> None:
    page, heading, sentence = MOVED[old]
    path = ROOT / "docs" / page
    text = path.read_text(encoding="utf-8")
    if heading is not None:
        assert slug(heading) in anchors(path)
    assert _flat(sentence) in _flat(text)
    assert page in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_the_manual_builds_strictly(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "cli" / "index.html").is_file()
    page = (tmp_path / "site" / "read" / "index.html").read_text(encoding="utf-8")
    assert "libreyolo profile summary" in page


def test_every_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert [p for p in pages if f": {p}" not in nav] == []


def test_the_command_reference_is_current() -> None:
    generator = script_module("gen_cli_reference")
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == generator.render()


def test_the_command_reference_lists_every_flag() -> None:
    from libreyolo.cli.parser import SUBCOMMANDS, build_parser

    generator = script_module("gen_cli_reference")
    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    commands = generator._subparsers(generator._subparsers(build_parser())["profile"])
    for name, _ in SUBCOMMANDS:
        section = reference.split(f"## `libreyolo profile {name}`", 1)[1].split("\n## ", 1)[0]
        for action in commands[name]._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}`" in section, (name, flag)


def _config_keys(cls: type, prefix: str = "") -> list[str]:
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    keys = []
    for item in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[item.name]):
            keys += _config_keys(hints[item.name], f"{prefix}{item.name}.")
        else:
            keys.append(prefix + item.name)
    return keys


def test_the_command_reference_lists_every_config_key() -> None:
    from libreyolo.config.schema import ProfileConfig

    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    keys = _config_keys(ProfileConfig)
    assert {"batch", "window.steps", "tune.remeasure", "sweep.lock_dir"} <= set(keys)
    assert [key for key in keys if f"| `{key}` |" not in reference] == []
