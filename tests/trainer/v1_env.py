"""Where the tests find a real libreyolo 1.6.0 environment (never this package's own).

`.ci/run` builds it (`.venv-v1`, torch and libreyolo 1.6.0 from PyPI) before the tests and
exports `LIBREYOLO_V1_PYTHON`; a developer makes the same with

    python3 -m venv .venv-v1 && .venv-v1/bin/pip install torch==2.14.1 torchvision==0.29.1 \
        libreyolo==1.6.0

A test that needs it fails, saying so, when it is missing: the probe's claims are about the
real trainer, so no test of them may pass without it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VARIABLE = "LIBREYOLO_V1_PYTHON"


def v1_python() -> str:
    """The Python of the libreyolo 1.6.0 environment (pytest.fail when there is none)."""
    given = os.environ.get(VARIABLE)
    candidate = Path(given) if given else ROOT / ".venv-v1" / "bin" / "python"
    if not candidate.is_file():
        pytest.fail(
            f"no libreyolo 1.6.0 environment at {candidate}: set {VARIABLE} or build .venv-v1 "
            "(tests/trainer/v1_env.py says how)"
        )
    return str(candidate)
