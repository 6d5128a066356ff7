"""Named stages of a measurement: progress says where a run is, and a failure says where it
failed and what to try, in one line instead of a traceback.

Expected failures (ProfileError) pass through unchanged: they already say what to do. Memory
or disk exhaustion says what to change; anything else names the stage and the error. All of
them end the measurement without a profile (exit 3).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from libreyolo.errors import NoProfileError, ProfileError
from libreyolo.measure.failures import resource_failure

Progress = Callable[[str, int, int], None]


class StageError(NoProfileError):
    """An unexpected failure inside a named stage of a measurement (exit 3)."""

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
        mapped = resource_failure(err, name)
        if mapped is not None:
            raise mapped from err
        raise StageError(f"stage '{name}' failed: {type(err).__name__}: {err}", hint=hint) from err
