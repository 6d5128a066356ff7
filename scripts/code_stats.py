"""Size figures of the package: module lines (median, max), functions over 60 lines, the
lines holding `dict[str, Any]`, and where the process prints or exits.
Run from the repository root: `python scripts/code_stats.py [--json]`.

Counts physical lines of each `libreyolo/**/*.py` module and, per function (methods included),
the lines from its `def` to its last statement, so the numbers match what a reader scrolls.
"""

from __future__ import annotations

import ast
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "libreyolo"
LONG_FUNCTION_LINES = 60


def _functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
            found.append((node.name, node.end_lineno - node.lineno + 1))
    return found


def stats() -> dict[str, object]:
    modules = sorted(PACKAGE.rglob("*.py"))
    lines = {
        p.relative_to(ROOT).as_posix(): len(p.read_text("utf-8").splitlines()) for p in modules
    }
    long = [
        (f"{p.relative_to(ROOT).as_posix()}:{name}", size)
        for p in modules
        for name, size in _functions(p)
        if size > LONG_FUNCTION_LINES
    ]
    biggest = max(lines, key=lambda k: lines[k])
    return {
        "num_modules": len(lines),
        "module_lines_median": statistics.median(lines.values()),
        "module_lines_max": lines[biggest],
        "largest_module": biggest,
        "functions_over_60_lines": dict(sorted(long, key=lambda item: -item[1])),
        "dict_str_any_lines": sum(
            line.count("dict[str, Any]") > 0
            for p in modules
            for line in p.read_text("utf-8").splitlines()
        ),
        "prints_or_exits": dict(_prints_or_exits(modules)),
    }


def _is_process_call(node: ast.AST) -> bool:
    """print(...), sys.exit(...), sys.stdout/stderr.write(...) or `raise SystemExit`."""
    if isinstance(node, ast.Raise) and node.exc is not None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        return isinstance(exc, ast.Name) and exc.id == "SystemExit"
    if not isinstance(node, ast.Call):
        return False
    name = ast.unparse(node.func)
    return name in {"print", "sys.exit", "sys.stdout.write", "sys.stderr.write"}


def _prints_or_exits(modules: list[Path]) -> list[tuple[str, int]]:
    found = []
    for path in modules:
        tree = ast.parse(path.read_text("utf-8"), filename=str(path))
        num = sum(_is_process_call(node) for node in ast.walk(tree))
        if num:
            found.append((path.relative_to(ROOT).as_posix(), num))
    return found


def main() -> int:
    figures = stats()
    if "--json" in sys.argv[1:]:
        print(json.dumps(figures, indent=2))
        return 0
    for key, value in figures.items():
        if isinstance(value, dict):
            print(f"{key}: {len(value)}")
            for name, size in value.items():
                print(f"  {size:4d}  {name}")
        else:
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
