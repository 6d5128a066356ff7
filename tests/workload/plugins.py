"""Install a plug-in package from a temporary folder: its modules plus a dist-info with the
`libreyolo.workloads` entry points, on sys.path for one test (the way pip would leave it)."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from libreyolo.workload import registry


@contextmanager
def installed(site: Path, dist: str, modules: dict[str, str], entry_points: str) -> Iterator[Path]:
    """`modules` (dotted name -> source) and `dist`'s entry_points.txt under `site`, importable
    until the block ends; the registry forgets them afterwards."""
    for name, source in modules.items():
        *packages, leaf = name.split(".")
        folder = site.joinpath(*packages)
        folder.mkdir(parents=True, exist_ok=True)
        for depth in range(len(packages)):
            site.joinpath(*packages[: depth + 1], "__init__.py").touch()
        (folder / f"{leaf}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    sys.path.insert(0, str(site))
    registry.clear_cache()
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        for name in list(sys.modules):
            if name.split(".")[0] in {m.split(".")[0] for m in modules}:
                sys.modules.pop(name)
        registry.clear_cache()
