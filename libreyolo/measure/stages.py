"""Named stages of a measurement: progress says where a run is, and a failure says where it
failed and what to try, in one line instead of a traceback.

Expected failures (ProfileError) pass through unchanged: they already say what to do.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from libreyolo.errors import ProfileError

Progress = Callable[[str, int, int], None]


class StageError(ProfileError):
    """An unexpected failure inside a named stage of a measurement (exit 1)."""

    code = "stage_failed"


@contextlib.contextmanager
def stage(name: str, on_progress: Progress | None, *, hint: str) -> Iterator[None]:
    """Run a block as stage `name`: report it, and name it if it fails unexpectedly."""
    if on_progress is not None:
        on_progress(name, 0, 1)
    try:
        yield
    except ProfileError:
        raise
    except Exception as err:  # the one place a stage's unexpected failure becomes one line
        raise StageError(f"stage '{name}' failed: {type(err).__name__}: {err}", hint=hint) from err
