"""The `next:` lines name the program as the user started it, so pasting them works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from libreyolo.cli.invoked import invoked_as


def _on_path(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Path:
    script = folder / "libreyolo"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    return script


def test_the_bare_name_when_path_finds_the_same_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _on_path(monkeypatch, tmp_path)
    assert invoked_as([str(script), "profile"], [sys.executable, str(script)]) == "libreyolo"


def test_the_path_as_typed_when_path_finds_another_or_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = tmp_path / "my venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "libreyolo").write_text("#!/bin/sh\n")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert invoked_as([".venv/bin/libreyolo"], []) == ".venv/bin/libreyolo"
    _on_path(monkeypatch, tmp_path)  # another libreyolo is on PATH: not the one that ran
    script = str(venv / "libreyolo")
    assert invoked_as([script], []) == f"'{script}'"  # quoted: the path has a space


def test_python_dash_m_as_typed() -> None:
    argv = ["/x/libreyolo/__main__.py", "profile", "infer"]
    orig = [".venv/bin/python", "-X", "utf8", "-m", "libreyolo", "profile", "infer"]
    assert invoked_as(argv, orig) == ".venv/bin/python -m libreyolo"


def test_not_started_from_a_command_line() -> None:
    pytest_main = "/usr/lib/python3/site-packages/pytest/__main__.py"
    assert invoked_as([pytest_main], ["pytest"]) == "libreyolo"
    assert invoked_as([pytest_main], [".venv/bin/python", "-m", "pytest", "-q"]) == "libreyolo"
    assert invoked_as([], []) == "libreyolo"


def test_an_unactivated_venv_script_prints_itself_in_the_next_lines(tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    script = bin_dir / "libreyolo"
    assert script.is_file(), "the package's console script is installed beside the interpreter"
    typed = os.path.relpath(script, bin_dir.parent)
    env = {**os.environ, "PATH": "/usr/bin:/bin"}  # as README's un-activated .venv
    argv = [typed, "profile", "infer", "--device", "cpu", "--imgsz", "64", "--runs", "2"]
    argv += ["--warmup", "1", "--no-trace", "--project", str(tmp_path)]
    done = subprocess.run(
        argv, cwd=bin_dir.parent, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    path = tmp_path / "infer" / "profile.json"
    assert f"next:    {typed} profile summary {path}" in done.stdout.splitlines()
    assert f"         {typed} profile report {path}  (an HTML page)" in done.stdout.splitlines()
