"""The GPU machine's Python environment, checked before any device time is spent measuring.

The lent GPU machine reaches no package registry. Its own `python3` (3.12) holds torch,
torchvision, numpy, rich, PyYAML, Pillow and packaging; what else the project imports travels
as wheels in `.whl/` (git-ignored, filled here by `scripts/fetch_gpu_wheels.sh` from the pins
in `scripts/gpu_wheels.txt`). This script is stdlib only, so it runs on either machine:

    python3 scripts/gpu_env.py check   [--wheels .whl]   # here: --dry-run of gpu_check.sh
    python3 scripts/gpu_env.py install [--wheels .whl] --site /tmp/site   # there, for real

`check` proves the wheel folder is complete (every pin present once, for CPython 3.12 on
x86-64 Linux, and every wheel's own requirements met by a wheel or by the machine), installs it
for that target into a scratch folder, and resolves every third-party module the project
imports against that folder plus the machine's own packages. `install` installs for the
running interpreter and then really imports every such module. Exit status 0 when all is well;
otherwise one line per problem on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.machinery
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PINS = ROOT / "scripts" / "gpu_wheels.txt"
TARGET_PYTHON = "3.12"  # the lent GPU machine's own python3 is CPython 3.12
TARGET_PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)
# Distributions the GPU machine's python3 already holds (it reaches no registry, so only the
# others come from .whl/), with the modules they provide.
MACHINE_DISTS = {
    "torch": ("torch",),
    "torchvision": ("torchvision",),
    "numpy": ("numpy",),
    "rich": ("rich",),
    "pyyaml": ("yaml",),
    "pillow": ("PIL",),
    "packaging": ("packaging",),
    "matplotlib": ("matplotlib",),
}
# Imported by the project only behind an extra the GPU check does not use (onnxruntime: its
# CUDA provider, onnxruntime-gpu, is several times what a device call can carry; mlflow and
# tensorboard: `profile log` and the sweep's tracking callbacks, which no device step runs;
# requests: read only to tell an MLflow server that could not be reached, mlflow's own need).
OPTIONAL_MODULES = {"ray", "submitit", "hydra_plugins", "onnxruntime", "mlflow", "tensorboard"}
OPTIONAL_MODULES |= {"requests"}
# The code the GPU check runs: the package, the truth report and the scenarios it imports.
SCANNED = ("libreyolo", "scripts/truth_report.py", "tests/truth/scenarios.py")
_WHEEL = re.compile(
    r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-(?P<py>[^-]+)-[^-]+-(?P<plat>[^-]+)\.whl$"
)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path = PINS) -> dict[str, str]:
    """`name==version` lines (comments and blanks skipped) as {normalised name: version}."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[_norm(name)] = version.strip()
    return pins


def _fits(py_tag: str, plat_tag: str, python: str) -> bool:
    pythons = set(py_tag.split("."))
    platforms = set(plat_tag.split("."))
    digits = python.replace(".", "")
    py_ok = bool(pythons & {"py3", f"cp{digits}", f"py{digits}"})
    plat_ok = "any" in platforms or any(p.endswith("_x86_64") and "linux" in p for p in platforms)
    return py_ok and plat_ok


def _requirements(wheel: Path) -> list[str]:
    """The unconditional `Requires-Dist` names of a wheel (marked or extra ones skipped)."""
    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(meta).decode("utf-8", errors="replace")
    names = []
    for line in text.splitlines():
        if line.startswith("Requires-Dist:") and ";" not in line:
            names.append(_norm(re.split(r"[ <>=!~\[(]", line.split(":", 1)[1].strip())[0]))
    return names


def wheel_problems(wheels: Path, pins: dict[str, str], python: str = TARGET_PYTHON) -> list[str]:
    """Why the wheel folder cannot serve CPython `python` on x86-64 Linux (empty when it can)."""
    if not wheels.is_dir():
        return [f"no wheel folder at {wheels} (run scripts/fetch_gpu_wheels.sh)"]
    found: dict[str, list[tuple[str, Path]]] = {}
    problems = []
    for path in sorted(wheels.glob("*.whl")):
        match = _WHEEL.match(path.name)
        if match is None:
            problems.append(f"not a wheel file name: {path.name}")
            continue
        name = _norm(match["name"])
        found.setdefault(name, []).append((match["version"], path))
        if not _fits(match["py"], match["plat"], python):
            problems.append(f"{path.name} does not install on CPython {python} x86-64 Linux")
    for name, version in pins.items():
        have = found.get(name, [])
        if not have:
            problems.append(f"missing wheel: {name}=={version}")
        elif len(have) > 1:
            problems.append(f"{len(have)} wheels of {name} (keep one: two stop the install)")
        elif have[0][0] != version:
            problems.append(f"{have[0][1].name} is not the pinned {name}=={version}")
    for name, have in found.items():
        for requirement in _requirements(have[0][1]):
            if requirement not in found and requirement not in MACHINE_DISTS:
                problems.append(f"{name} needs {requirement}: neither a wheel nor on the machine")
    return problems


def imported_modules(paths: tuple[str, ...] = SCANNED) -> set[str]:
    """Top-level third-party modules imported anywhere in the code the GPU check runs."""
    names: set[str] = set()
    for entry in paths:
        base = ROOT / entry
        for file in [base] if base.is_file() else sorted(base.rglob("*.py")):
            tree = ast.parse(file.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    own = {"libreyolo", "tests", "scripts", "__future__"}
    return {n for n in names if n not in sys.stdlib_module_names and n not in own} - set(
        OPTIONAL_MODULES
    )


def _install(wheels: Path, site: Path, *, for_target: bool) -> list[str]:
    argv = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
    argv += ["--no-compile", "--no-cache-dir", "--upgrade", "--target", str(site)]
    if for_target:  # install as the GPU machine's interpreter would, whatever runs here
        argv += ["--python-version", TARGET_PYTHON, "--implementation", "cp"]
        argv += ["--only-binary=:all:", *(f"--platform={p}" for p in TARGET_PLATFORMS)]
    argv += [str(p) for p in sorted(wheels.glob("*.whl"))]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode == 0:
        return []
    last = [line for line in proc.stderr.splitlines() if line.strip()][-1:] or ["no output"]
    return [f"pip could not install the wheels: {last[0].strip()}"]


def unresolved(modules: set[str], site: Path) -> list[str]:
    """Modules found neither in the installed wheels nor among the machine's own packages."""
    machine = {m for provided in MACHINE_DISTS.values() for m in provided}
    missing = []
    for name in sorted(modules):
        in_wheels = importlib.machinery.PathFinder.find_spec(name, [str(site)]) is not None
        if not in_wheels and name not in machine:
            missing.append(f"import {name}: in no wheel and not on the GPU machine")
    return missing


def import_failures(modules: set[str], site: Path) -> list[str]:
    """Modules this interpreter cannot really import with the wheels and the repo on its path."""
    sys.path[:0] = [str(ROOT), str(site)]
    failures = []
    for name in sorted(
        modules | {"libreyolo.cli.main", "libreyolo.measure", "libreyolo.sweep.app"}
    ):
        try:
            importlib.import_module(name)
        except Exception as err:  # any failure to import is the finding this check reports
            failures.append(f"import {name} failed: {type(err).__name__}: {err}")
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("check", "install"))
    parser.add_argument("--wheels", type=Path, default=ROOT / ".whl")
    parser.add_argument("--site", type=Path, help="install target (install: required)")
    args = parser.parse_args(argv)
    # check: for the GPU machine's interpreter; install: for the one running this script.
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    python = TARGET_PYTHON if args.action == "check" else running
    problems = wheel_problems(args.wheels, read_pins(), python)
    modules = imported_modules()
    if not problems and args.action == "check":
        with tempfile.TemporaryDirectory(prefix="gpu-site-") as scratch:
            problems = _install(args.wheels, Path(scratch), for_target=True)
            problems = problems or unresolved(modules, Path(scratch))
    elif not problems:
        if args.site is None:
            parser.error("install needs --site")
        problems = _install(args.wheels, args.site, for_target=False)
        problems = problems or import_failures(modules, args.site)
    for line in problems:
        print(f"gpu_env: {line}", file=sys.stderr)
    if not problems:
        names = ", ".join(sorted(modules))
        print(f"gpu_env: {args.action} ok: {len(modules)} third-party modules resolve ({names})")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
