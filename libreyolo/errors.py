"""Exit statuses and the error hierarchy. Each error class owns its status and code.

Only `libreyolo.boundary.status` turns these into a process status (`exit_status` maps an
error to its status and one line, `exit_process` ends the process); nothing else exits.
Every entry point, the `libreyolo` CLI and the sweep's alike, goes through it.
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar


class ExitStatus(IntEnum):
    """The exit statuses of every entry point (listed for users in README.md, "Documents")."""

    OK = 0
    FAILED = 1  # a trace or profile cannot be analysed
    USAGE = 2  # missing file, invalid arguments, unknown field/phase/category
    NO_PROFILE = 3  # run/infer ended without writing a profile
    REGRESSION = 4  # compare --fail-on-regression: after is significantly worse (output printed)
    INTERRUPTED = 130  # 128 + SIGINT
    TERMINATED = 143  # 128 + SIGTERM


class ProfileError(Exception):
    """Base of every error raised on purpose; subclasses fix the exit status and the code."""

    status: ClassVar[ExitStatus] = ExitStatus.FAILED
    code: ClassVar[str] = "failed"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class AnalysisError(ProfileError):
    """A file exists but cannot be analysed (not JSON, truncated, no events, wrong shape)."""

    code = "cannot_analyse"


class SchemaTooNewError(AnalysisError):
    """A profile written by a newer libreyolo than this one."""

    code = "schema_too_new"


class UsageError(ProfileError):
    """Arguments that cannot be used."""

    status = ExitStatus.USAGE
    code = "usage"


class MissingFileError(UsageError):
    """A path that does not exist or is not a regular file."""

    code = "not_found"


class UnknownNameError(UsageError):
    """An unknown metric, phase, category or sort key."""

    code = "unknown_name"


class DestinationError(UsageError):
    """An output folder that cannot take a run's files: not a folder, read-only, a name too
    long, or something there that this tool did not make (and so will not replace)."""

    code = "bad_destination"


class BusyError(UsageError):
    """Another run holds the output folder's commit lock for too long."""

    code = "busy"


class NoProfileError(ProfileError):
    """A measuring command ended without a profile."""

    status = ExitStatus.NO_PROFILE
    code = "no_profile"


class WontFitError(NoProfileError):
    """Refused before measuring: the batch would need more host memory than is available. Like
    a real out-of-memory error it is "the run produced no profile" (exit 3), not a bad argument:
    the same flags fit a larger host (a sweep records it as a point that does not fit, `oom`)."""

    code = "wont_fit"


class OutOfMemoryError(NoProfileError):
    """A measurement ran out of host or device memory."""

    code = "out_of_memory"


class DiskFullError(NoProfileError):
    """A measurement could not write its files: no space (or quota) left."""

    code = "disk_full"


class TrialCrashedError(NoProfileError):
    """A `--repeat` trial's own process died, or raised what is not an expected error."""

    code = "trial_crashed"


class RankFailedError(NoProfileError):
    """A rank of a multi-process run died, hung past the collective timeout, or failed: the
    whole run fails (the line names the rank)."""

    code = "rank_failed"


class ResultNotShownError(ProfileError):
    """A reader's result could not be written to stdout (closed, full, or its reader gone)."""

    code = "stdout_failed"


class MeasuredResultNotShownError(NoProfileError):
    """A measurement's result could not be written to stdout; its files are written."""

    code = "stdout_failed"


class MissingExtraError(ProfileError):
    """A command needs an optional extra that is not installed (the hint names the pip line)."""

    status = ExitStatus.NO_PROFILE
    code = "missing_extra"


class Terminated(BaseException):
    """SIGTERM arrived; raised by the handler `libreyolo.cli.main` installs (exit 143 through
    `libreyolo.boundary.status`).

    A BaseException, like KeyboardInterrupt, so that `except Exception` does not swallow it
    and every `with` block on the way out (staging directories) cleans up.
    """


class CheckpointError(UsageError):
    """A weights file that is not a usable checkpoint (not one, truncated, another family...)."""

    code = "bad_checkpoint"


class DatasetError(UsageError):
    """A dataset that cannot be used (missing YAML or images, no labels, refused bad files)."""

    code = "bad_dataset"


class TrainerError(UsageError):
    """`--trainer` that cannot be used: no interpreter there, or libreyolo 1.x's `libreyolo
    train` refused the settings it was given."""

    code = "bad_trainer"


class TrainerFailedError(NoProfileError):
    """libreyolo 1.x's trainer ended, hung or crashed before its window was measured, or lacks
    the hook points the probe times it through."""

    code = "trainer_failed"
