"""The architecture holds: import contracts, and readers that run without heavy modules."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKED = ("torch", "torchvision", "numpy", "hydra", "omegaconf", "PIL")


def test_import_contracts_hold() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.skip("import-linter is not installed")
    proc = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _run_blocked(argv: list[str]) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\n"
        f"for name in {BLOCKED!r}: sys.modules[name] = None\n"
        "from libreyolo.cli.main import main\n"
        f"raise SystemExit(main({argv!r}))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT
    )


@pytest.mark.parametrize("reader", ["summary", "get", "phases", "kernels", "ops"])
def test_readers_run_without_heavy_modules(
    reader: str, reference_v1: Path, gpu_traces: Path
) -> None:
    for target in (
        reference_v1 / "train_cpu.profile.json",
        gpu_traces / "tracelens_h100_vit_infer_1step.json.gz",
    ):
        proc = _run_blocked(["profile", reader, str(target)])
        assert proc.returncode == 0, proc.stderr


def test_report_runs_without_heavy_modules(
    reference_v1: Path, gpu_traces: Path, tmp_path: Path
) -> None:
    one = str(reference_v1 / "train_cpu.profile.json")
    trace = str(gpu_traces / "tracelens_h100_vit_infer_1step.json.gz")
    for inputs in ([one], [trace], [one, trace]):
        proc = _run_blocked(["profile", "report", *inputs, "-o", str(tmp_path / "r.html")])
        assert proc.returncode == 0, proc.stderr


def test_compare_and_what_if_run_without_heavy_modules(reference_v1: Path) -> None:
    a, b = str(reference_v1 / "infer_b1.profile.json"), str(reference_v1 / "infer_b4.profile.json")
    assert _run_blocked(["profile", "compare", a, b]).returncode == 0
    assert _run_blocked(["profile", "what-if", a, "--remove-launches", "1"]).returncode == 2


def test_reader_import_pulls_in_no_heavy_module() -> None:
    code = (
        "import sys\nimport libreyolo.cli.main\n"
        f"print(sorted(m for m in {BLOCKED!r} if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert proc.stdout.strip() == "[]"
