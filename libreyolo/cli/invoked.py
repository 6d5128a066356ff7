"""The command a user typed to start `libreyolo`, for the `next:` lines they can paste back.

Role: README's un-activated `.venv/bin/libreyolo ...` has no `libreyolo` on PATH, so a bare
`libreyolo profile summary` line would fail when pasted; `python -m libreyolo` likewise. The
program is read from argv as Python received it. Must not: resolve symlinks or make a relative
path absolute (the user's own spelling is the one that works from where they are).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Sequence

PROGRAM = "libreyolo"


def invoked_as(
    argv: Sequence[str] | None = None,
    orig_argv: Sequence[str] | None = None,
) -> str:
    """`libreyolo` when that is what PATH finds, else the script path or `<python> -m <module>`
    as typed; `libreyolo` when the CLI was not started from a command line (a test's `main`)."""
    argv = sys.argv if argv is None else argv
    orig_argv = sys.orig_argv if orig_argv is None else orig_argv
    script = argv[0] if argv else ""
    if os.path.basename(script) == "__main__.py" and "-m" in orig_argv:
        at = list(orig_argv).index("-m")
        module = orig_argv[at + 1] if at + 1 < len(orig_argv) else ""
        if module.split(".")[0] == PROGRAM:  # not `python -m pytest` calling main()
            return shlex.join([orig_argv[0], "-m", module])
    if os.path.basename(script) != PROGRAM:
        return PROGRAM
    found = shutil.which(PROGRAM)
    if found is not None and _same_file(found, script):
        return PROGRAM
    return shlex.quote(script)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
