"""Shared test fixtures: fixture paths, an in-process CLI runner and golden files."""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from libreyolo.boundary.output import Output
from libreyolo.cli.main import main
from tests.fixture_files import fixture_dir

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden"


def pytest_configure(config: pytest.Config) -> None:
    """One GEMM-peak cache for the session, never the user's: a run calibrates once per dtype
    and thread count, and no test reads a peak another machine or session measured."""
    import os
    import tempfile

    os.environ["LIBREYOLO_CACHE_DIR"] = tempfile.mkdtemp(prefix="libreyolo-test-cache-")


@pytest.fixture
def unwritable_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`$LIBREYOLO_CACHE_DIR` under a plain file, so nothing can be written there (as root,
    chmod would not stop a write); the file, to show it was left alone."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("LIBREYOLO_CACHE_DIR", str(blocker / "cache"))
    return blocker


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", help="rewrite tests/golden files")


@pytest.fixture
def reference_v1() -> Path:
    """The four profile.json files libreyolo 1.6.0 wrote (tests/fixtures/reference_v1)."""
    return fixture_dir("reference_v1")


@pytest.fixture
def gpu_traces() -> Path:
    """Four real GPU Chrome traces with their licences (tests/fixtures/gpu_traces)."""
    return fixture_dir("gpu_traces")


@dataclass(frozen=True)
class CliResult:
    status: int
    stdout: str
    stderr: str

    def json(self) -> object:
        return json.loads(self.stdout)


def invoke(argv: list[str]) -> CliResult:
    """Run `libreyolo <argv>` in-process with captured streams (width 100, no colour)."""
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, output=Output(out, err, json_mode="--json" in argv))
    return CliResult(int(status), out.getvalue(), err.getvalue())


@pytest.fixture
def run_cli():
    return invoke


@pytest.fixture
def golden(request: pytest.FixtureRequest):
    update = request.config.getoption("--update-goldens")

    def check(name: str, actual: str) -> None:
        path = GOLDEN / name
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual, encoding="utf-8")
            return
        if not path.exists():
            pytest.fail(f"golden {name} missing: run pytest --update-goldens and review the diff")
        assert actual == path.read_text(encoding="utf-8")

    return check


@pytest.fixture
def two_threads() -> Iterator[None]:
    """torch at 2 intra-op threads, so a restored count differs from the one asked for."""
    import torch  # here, not at the top: most tests never need torch

    original = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(original)


# CPU profiles measured once per session (small windows) for the report tests.
def _measure(factory: pytest.TempPathFactory, name: str, command: str) -> Path:
    """`libreyolo profile <command> --project <a fresh folder>`; that folder."""
    project = factory.mktemp(name)
    result = invoke(["profile", *command.split(), "--project", str(project)])
    assert result.status == 0, result.stderr
    return project


@pytest.fixture(scope="session")
def cpu_infer_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    command = "infer --device cpu --imgsz 64 --warmup 2 --runs 20"
    return _measure(tmp_path_factory, "report-infer", command) / "infer" / "profile.json"


@pytest.fixture(scope="session")
def cpu_train_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    command = "run synthetic --device cpu --batch 2 --imgsz 64 --steps 6 --warmup 1 --workers 0"
    return _measure(tmp_path_factory, "report-train", command) / "run" / "profile.json"


@pytest.fixture(scope="session")
def cpu_repeat_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two `--repeat 3` inference aggregates, imgsz 64 then 128: a real, significant change."""
    command = "infer --device cpu --imgsz {} --warmup 2 --runs 10 --repeat 3"
    before = _measure(tmp_path_factory, "report-before", command.format(64))
    after = _measure(tmp_path_factory, "report-after", command.format(128))
    return before / "infer_repeat.json", after / "infer_repeat.json"


@pytest.fixture(scope="session")
def cpu_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real 6-point CPU sweep (batch 1, 2, 4 × imgsz 64, 96; `libreyolo-sweep`, which writes
    sweep.json and sweep.html itself)."""
    from tests.sweep.helpers import tiny_sweep_argv

    sweep_dir = tmp_path_factory.mktemp("sweep")
    argv = tiny_sweep_argv(sweep_dir, "batch=1,2,4", "imgsz=64,96", "window.runs=6")
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return sweep_dir
