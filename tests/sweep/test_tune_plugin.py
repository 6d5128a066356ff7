"""`hydra/sweeper=tune` is a Hydra plug-in of ours: packaged, found by Hydra's registry, let
through by the sweep's trust check, and cheap for every Hydra app that scans plug-ins."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from hydra.core.plugins import Plugins

from hydra_plugins.libreyolo_tune_sweeper.tune_sweeper import TuneSweeper
from libreyolo.config.schema import register_schemas
from libreyolo.sweep.trust import Trust, composed_hydra, untrusted
from libreyolo.sweep.tune_run import TUNE_SWEEPER

ROOT = Path(__file__).resolve().parents[2]


def test_the_option_names_the_registered_plugin_and_passes_the_trust_check() -> None:
    assert f"{TuneSweeper.__module__}.{TuneSweeper.__qualname__}" == TUNE_SWEEPER
    assert TUNE_SWEEPER in Plugins.instance().class_name_to_class  # Hydra's scan found it
    register_schemas()
    hydra = composed_hydra(["-m", "hydra/sweeper=tune", "imgsz=320,640"])
    assert hydra is not None
    assert hydra["sweeper"] == {"_target_": TUNE_SWEEPER, "params": None}
    assert untrusted(hydra, Trust()) is None


def test_the_plugin_is_packaged_and_imports_nothing_heavy() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "hydra_plugins*" in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    assert not (ROOT / "hydra_plugins" / "__init__.py").exists()  # a namespace package
    probe = (
        "import sys, hydra_plugins.libreyolo_tune_sweeper.tune_sweeper; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'libreyolo')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "[]\n"
