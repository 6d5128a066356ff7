"""A training environment whose `libreyolo` is the fake 1.x of `fake_v1/`: a `bin/python` that
runs this interpreter with the fake first on PYTHONPATH (see fake_v1/README.md)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

FAKE_SITE = Path(__file__).resolve().parent / "fake_v1"


def fake_environment(root: Path, **variables: str) -> Path:
    """`root` made a fake 1.x environment (its `bin/python`); `variables` are set for it
    (FAKE_LIBREYOLO_VERSION, FAKE_WITHOUT)."""
    python = root / "bin" / "python"
    python.parent.mkdir(parents=True, exist_ok=True)
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in variables.items())
    python.write_text(
        "#!/bin/sh\n"
        f"export PYTHONPATH={shlex.quote(str(FAKE_SITE))}\n"
        f"{exports}"
        f'exec {shlex.quote(sys.executable)} "$@"\n',
        encoding="utf-8",
    )
    os.chmod(python, 0o755)
    return python
