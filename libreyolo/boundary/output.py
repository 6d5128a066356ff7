"""The only code that writes to stdout and stderr. Results go to stdout; people's messages to
stderr, one line each. Under `--json` stdout carries exactly one JSON document, under `--csv` one
CSV table.

Every entry point makes one `Output` (the real streams, or the streams a test hands it) and
writes through it; a test fails on any other `print(` or write to a standard stream.
Must not: exit, or decide what a status is (`libreyolo.boundary.status` does both).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO, cast

if TYPE_CHECKING:
    from rich.progress import TaskID

from libreyolo.boundary.streams import BestEffortStream, ClosedStream, best_effort
from libreyolo.errors import ProfileError
from libreyolo.render.safe import safe_text
from libreyolo.render.text import to_lines


class Output:
    """Where results and messages go; tests inject StringIO streams.

    A plain class, not a dataclass: importing dataclasses costs `get` start-up time.
    """

    def __init__(
        self,
        stdout: TextIO,
        stderr: TextIO,
        *,
        json_mode: bool = False,
        color: bool = False,
        width: int | None = None,
    ) -> None:
        self.stdout, self.stderr = stdout, stderr
        self.json_mode, self.color, self.width = json_mode, color, width
        self._bar: Any = None  # a rich Progress while a measurement shows one

    @classmethod
    def for_terminal(cls, *, json_mode: bool, no_color: bool) -> Output:
        """The real streams; colour only on a terminal and without NO_COLOR/--no-color."""
        stdout, stderr = _process_streams()
        color = stdout.isatty() and not no_color and "NO_COLOR" not in os.environ
        return cls(stdout, stderr, json_mode=json_mode, color=color)

    @classmethod
    def plain(cls) -> Output:
        """The real streams as they are now, plain text: the sweep's entry points and a point's
        child process, whose stderr is a log file as often as a terminal."""
        return cls(*_process_streams())

    def emit(self, result: object, source: str | tuple[str, str] | None) -> None:
        """Write one result to stdout, as JSON or as text (rich only where a view needs it)."""
        if self.json_mode:
            from libreyolo.render.jsondoc import to_json_text

            self.stdout.write(to_json_text(result, source=source))
            return
        lines = to_lines(result)
        if not self.color:
            self.stdout.write("".join(line + "\n" for line in lines))
            return
        from rich.console import Console  # colour terminals only: piped output skips rich

        from libreyolo.render.style import styled

        console = Console(
            file=self.stdout, highlight=False, soft_wrap=True, width=self.width, force_terminal=True
        )
        console.print(styled(lines))

    def emit_csv(self, result: object, source: str | tuple[str, str] | None) -> None:
        """Write one tabular result to stdout as CSV (`--csv`)."""
        from libreyolo.render.csv_out import to_csv_text

        self.stdout.write(to_csv_text(result, source=source))

    def lines(self, text: str) -> None:
        """Result text for stdout (a sweep's point line, its table), each line escaped and the
        stream flushed, so a sweep piped into a file shows each point as it ends."""
        self.stdout.write("".join(safe_text(line) + "\n" for line in text.split("\n")))
        self.stdout.flush()

    def progress(self) -> Callable[[str, int, int], None] | None:
        """A live rich progress display on stderr (stage, i/N, ETA) for measurements; None, i.e.
        silent, under --json or when stderr is not a terminal. `close()` removes it."""
        if self.json_mode or not self.stderr.isatty():
            return None
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        bar = Progress(
            TextColumn("{task.description:<14}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(file=self.stderr),
            transient=True,
        )
        tasks: dict[str, TaskID] = {}
        self._bar = bar

        def show(stage: str, done: int, total: int) -> None:
            if not tasks:
                bar.start()
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done)

        return show

    def close(self) -> None:
        """Stop a live progress display, if one was started."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def notice(self, label: str, text: str) -> None:
        """A `warning: ...` or `note: ...` line from a measurement, escaped; none under --json,
        where stderr carries at most the error object (the profile records what it said)."""
        self.say(f"{label}: {text}")

    def say(self, text: str) -> None:
        """One line for people on stderr, escaped; none under --json (see `notice`)."""
        if not self.json_mode:
            self.stderr.write(safe_text(text) + "\n")

    def relay(self, text: str) -> None:
        """What another process wrote to its stderr (a sweep point's log), passed on as it is:
        it was that process's own stream, already meant for the same reader."""
        self.stderr.write(text)

    def traceback(self, err: BaseException) -> None:
        """A crash's traceback on stderr, as the interpreter would print it: where no `--debug`
        flag exists (the sweep's entry points) it is the only way to the cause."""
        import traceback

        self.stderr.write("".join(traceback.format_exception(err)))

    def deliver(self) -> None:
        """Push the result out of Python's buffer now, so a closed, full or abandoned stdout
        fails here, where the command can still say so, and not in the interpreter's exit."""
        self.stdout.flush()

    def flush(self) -> None:
        """Flush both streams: the process is about to end (a child exits without its
        interpreter's own clean-up). A stream that cannot take it has already been reported
        (`deliver`) or is best effort (stderr)."""
        from contextlib import suppress

        for stream in (self.stdout, self.stderr):
            with suppress(OSError, ValueError):
                stream.flush()

    @staticmethod
    def flush_process_streams() -> None:
        """Flush what Python still holds for the process's own stdout and stderr (whoever wrote
        it) before an exit that skips the interpreter's finalization. A closed or broken stream
        (a reader that went away) has nothing the process could still deliver."""
        from contextlib import suppress

        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):
                stream.flush()

    def error(self, err: ProfileError) -> None:
        """One line on stderr: text (control characters escaped: messages quote file content
        and arguments), or a JSON object under --json (json.dumps escapes them itself)."""
        if self.json_mode:
            payload = {"error": {"code": err.code, "message": err.message, "hint": err.hint}}
            self.stderr.write(json.dumps(payload) + "\n")
        else:
            hint = f" ({err.hint})" if err.hint else ""
            self.stderr.write(safe_text(f"{err.message}{hint}") + "\n")

    def error_line(self, code: str, message: str) -> None:
        """A one-line message that has no ProfileError behind it (interrupts, crashes)."""
        if self.json_mode:
            self.stderr.write(
                json.dumps({"error": {"code": code, "message": message, "hint": None}}) + "\n"
            )
        else:
            self.stderr.write(safe_text(message) + "\n")


def _process_streams() -> tuple[TextIO, TextIO]:
    """(stdout, stderr) of the process: stdout as it is (closed at start: every write fails),
    stderr best effort. `sys.stderr` itself is replaced too, so a library's warning that
    cannot be shown cannot fail the command either."""
    stdout = sys.stdout if sys.stdout is not None else cast(TextIO, ClosedStream())
    if not isinstance(sys.stderr, BestEffortStream):
        sys.stderr = best_effort(sys.stderr)
    return stdout, cast(TextIO, sys.stderr)
