"""`main(argv) -> int`: parse, dispatch and emit one `libreyolo` command line.

The status comes from `libreyolo.boundary.status.exit_status`, the one map every entry point
uses; `run` hands it to `exit_process`. Must not: print but through `Output`, or exit.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import signal
import sys
from collections.abc import Iterator, Sequence
from types import FrameType

from libreyolo.boundary.output import Output
from libreyolo.boundary.status import exit_process, exit_status
from libreyolo.boundary.streams import best_effort, discard_stdout
from libreyolo.cli.foreign import refuse_v1_command
from libreyolo.cli.parser import READERS, build_parser, reject_key_value
from libreyolo.errors import (
    ExitStatus,
    MeasuredResultNotShownError,
    ProfileError,
    ResultNotShownError,
    Terminated,
    UsageError,
)


def _drop_task_word(argv: list[str]) -> list[str]:
    # libreyolo 1.6.0 accepted a leading task word: `libreyolo detect profile ...`.
    return argv[1:] if argv[:1] == ["detect"] else argv


def _terminate(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut the cleanup short
    raise Terminated


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """SIGTERM raises Terminated for the block, so it unwinds like Ctrl-C (staging cleaned
    up, one line, exit 143). Signal handlers belong to the main thread; elsewhere, no-op."""
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def main(argv: Sequence[str] | None = None, *, output: Output | None = None) -> int:
    """Run one `libreyolo` command line and return its exit status (`exit_status` maps what
    the command raised; `--debug` lets errors through with their traceback)."""
    words = _drop_task_word(list(sys.argv[1:] if argv is None else argv))
    out = output or _terminal(words)
    return exit_status(lambda: _run(words, out), out, debug="--debug" in words)


def _terminal(words: list[str]) -> Output:
    return Output.for_terminal(json_mode="--json" in words, no_color="--no-color" in words)


def _run(words: list[str], out: Output) -> ExitStatus:
    """Parse, dispatch and emit one command line; the regression gate's status is a result."""
    with _sigterm_unwinds():
        refuse_v1_command(words)  # `libreyolo train ...`: 1.x's, in its own environment
        parser = build_parser(words)
        reject_key_value(words, parser)
        with contextlib.redirect_stdout(out.stdout):  # --help text is a result: stdout
            args = parser.parse_args(words)
        if not hasattr(args, "handler"):
            parser.print_help(out.stdout)
            return ExitStatus.OK
        table = getattr(args, "csv", False)  # only the tabular readers take --csv
        if table and args.json:
            raise UsageError("--csv and --json each print the whole result: give one of them")
        args.progress, args.notice, args.words = out.progress(), out.notice, words
        try:
            result, source = args.handler(args)
        finally:
            out.close()
        emit = out.emit_csv if table else out.emit
        try:
            if result is not None:  # None: a torchrun rank other than 0, which prints nothing
                emit(result, source)  # inside: a result that cannot be shown is one line too
            out.deliver()
        except OSError as err:
            raise _not_shown(words, err, out) from None
        if getattr(result, "gate_failed", False):  # compare --fail-on-regression
            from libreyolo.render.gate_text import regression_line

            out.error_line("regression", regression_line(result))  # printed: a result
            return ExitStatus.REGRESSION
    return ExitStatus.OK


def _not_shown(words: list[str], err: OSError, out: Output) -> ProfileError:
    """The error for a result stdout would not take: exit 1 for a reader, 3 for a measurement
    (its files are written, but the command did not end as asked). A reader that went away
    (`| head`) chose to stop: no line for it, like any Unix filter."""
    discard_stdout(out.stdout)
    measuring = words[:1] == ["profile"] and words[1:2] in (["run"], ["infer"])
    if err.errno == errno.EPIPE:
        out.stderr = best_effort(None)
    why = f"cannot write the result to stdout: {err.strerror or err}"
    if measuring:
        return MeasuredResultNotShownError(
            why, hint="the run's files are written: read them with `libreyolo profile summary`"
        )
    return ResultNotShownError(why)


def run() -> None:
    """Console-script entry point (`libreyolo`, `python -m libreyolo`)."""
    words = _drop_task_word(sys.argv[1:])
    out = _terminal(words)
    status = main(output=out)
    if words[:1] == ["profile"] and words[1:2] and words[1] in READERS:
        # The interpreter's last collection walks every object a reader left (a profile's
        # thousands of values, every module's) for cycles whose memory the exit returns anyway:
        # an eighth of its start. Frozen, they are skipped (atexit hooks still run).
        gc.freeze()
    # With torch loaded (a measurement, its files committed), the interpreter's teardown is
    # only a wait: skipped, the atexit hooks run and DataLoader workers are reaped by theirs.
    exit_process(status, out, finalize="torch" not in sys.modules)
