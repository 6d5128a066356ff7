"""`scripts/gpu_check.sh --dry-run`: the wheel folder for the GPU machine is complete and every
import resolves with it, or the check says which piece is missing (exit 1), before any device
time is spent. Wheels are built here as minimal real wheel files, so the test needs no network.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
PURE = "py3-none-any"
CP312 = "cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64"
# (distribution, version, module, tag, requirements): what scripts/gpu_wheels.txt pins.
WHEELS = (
    (
        "hydra_core",
        "1.3.8",
        "hydra",
        PURE,
        ("omegaconf<2.4,>=2.2", "antlr4-python3-runtime==4.9.*"),
    ),
    ("omegaconf", "2.3.1", "omegaconf", PURE, ("antlr4-python3-runtime==4.9.*", "PyYAML>=5.1.0")),
    ("antlr4_python3_runtime", "4.9.3", "antlr4", PURE, ()),
    ("msgspec", "0.23.0", "msgspec", CP312, ()),
)


def _gpu_env() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_env", ROOT / "scripts" / "gpu_env.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wheel(
    folder: Path, dist: str, version: str, module: str, tag: str, requires: tuple[str, ...]
) -> Path:
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": "",
        f"{info}/METADATA": "Metadata-Version: 2.1\n"
        f"Name: {dist}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires)
        + 'Requires-Dist: importlib-resources; python_version < "3.9"\n',
        f"{info}/WHEEL": "Wheel-Version: 1.0\n"
        + f"Root-Is-Purelib: {'true' if tag == PURE else 'false'}\n"
        + "".join(f"Tag: {t}\n" for t in _tags(tag)),
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    path = folder / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def _tags(tag: str) -> list[str]:
    py, abi, plats = tag.split("-")
    return [f"{py}-{abi}-{plat}" for plat in plats.split(".")]


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    folder = tmp_path / "whl"
    folder.mkdir()
    for entry in WHEELS:
        _wheel(folder, *entry)
    return folder


def _dry_run(wheels: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PYTHON": sys.executable, "WHEELS": str(wheels)}
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_gpu_check_dry_run_accepts_a_complete_wheel_folder(wheels: Path) -> None:
    proc = _dry_run(wheels)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("gpu_env: check ok: ")
    for module in ("hydra", "msgspec", "omegaconf", "torch", "yaml"):
        assert module in proc.stdout
    assert proc.stderr == ""


def test_gpu_check_dry_run_names_a_missing_wheel(wheels: Path) -> None:
    next(wheels.glob("msgspec-*.whl")).unlink()
    proc = _dry_run(wheels)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["gpu_env: missing wheel: msgspec==0.23.0"]


def test_gpu_check_dry_run_names_an_unmet_wheel_requirement(wheels: Path) -> None:
    next(wheels.glob("antlr4_*.whl")).unlink()
    lines = _dry_run(wheels).stderr.splitlines()
    assert "gpu_env: missing wheel: antlr4-python3-runtime==4.9.3" in lines
    assert (
        "gpu_env: omegaconf needs antlr4-python3-runtime: neither a wheel nor on the machine"
        in lines
    )


def test_gpu_check_dry_run_refuses_a_wheel_for_another_python(wheels: Path) -> None:
    next(wheels.glob("msgspec-*.whl")).unlink()
    _wheel(wheels, "msgspec", "0.23.0", "msgspec", "cp311-cp311-manylinux_2_17_x86_64", ())
    proc = _dry_run(wheels)
    assert proc.returncode == 1
    assert (
        "gpu_env: msgspec-0.23.0-cp311-cp311-manylinux_2_17_x86_64.whl does not install on "
        "CPython 3.12 x86-64 Linux" in proc.stderr.splitlines()
    )


def test_gpu_check_dry_run_refuses_two_versions_of_one_package(wheels: Path) -> None:
    _wheel(wheels, "hydra_core", "1.3.2", "hydra", PURE, ())
    proc = _dry_run(wheels)
    assert proc.returncode == 1
    assert "gpu_env: 2 wheels of hydra-core (keep one: two stop the install)" in proc.stderr


def test_gpu_check_dry_run_without_a_wheel_folder_says_how_to_make_one(tmp_path: Path) -> None:
    proc = _dry_run(tmp_path / "absent")
    assert proc.returncode == 1
    assert "(run scripts/fetch_gpu_wheels.sh)" in proc.stderr


def test_gpu_env_finds_an_import_that_nothing_provides(wheels: Path, tmp_path: Path) -> None:
    gpu_env = _gpu_env()
    site = tmp_path / "site"
    (site / "msgspec").mkdir(parents=True)
    (site / "msgspec" / "__init__.py").write_text("")
    assert gpu_env.unresolved({"msgspec", "torch", "psutil"}, site) == [
        "import psutil: in no wheel and not on the GPU machine"
    ]


def test_gpu_env_sees_every_third_party_import_of_the_package() -> None:
    modules = _gpu_env().imported_modules()
    assert {"torch", "hydra", "omegaconf", "msgspec", "rich", "yaml", "PIL"} <= modules
    assert not modules & {"os", "json", "libreyolo", "__future__"}
