"""The code stays clean: ruff (lint and format) and mypy pass on the package, as CI checks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent))
    if path is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")
    return path


def _run(argv: list[str]) -> None:
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_lint_is_clean() -> None:
    _run([_tool("ruff"), "check", "libreyolo", "tests", "scripts", "hydra_plugins"])


def test_ruff_format_is_applied() -> None:
    _run([_tool("ruff"), "format", "--check", "libreyolo", "tests", "scripts", "hydra_plugins"])


@pytest.mark.slow
def test_mypy_is_clean() -> None:
    _run([_tool("mypy"), "--cache-dir", "/dev/null"])
