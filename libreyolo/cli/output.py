"""The only place that writes to stdout and stderr. Results go to stdout; people's messages to
stderr, one line each. Under `--json` stdout carries exactly one JSON document.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

from libreyolo.errors import ProfileError
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

    @classmethod
    def for_terminal(cls, *, json_mode: bool, no_color: bool) -> Output:
        """The real streams; colour only on a terminal and without NO_COLOR/--no-color."""
        color = sys.stdout.isatty() and not no_color and "NO_COLOR" not in os.environ
        return cls(sys.stdout, sys.stderr, json_mode=json_mode, color=color)

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

    @property
    def progress(self) -> Callable[[str, int, int], None] | None:
        """A one-line live status on stderr for measurements; None (silent) under --json or
        when stderr is not a terminal."""
        if self.json_mode or not self.stderr.isatty():
            return None
        started: dict[str, float] = {}

        def show(stage: str, done: int, total: int) -> None:
            now = time.monotonic()
            start = started.setdefault(stage, now)
            eta = (now - start) / done * (total - done) if done else 0.0
            end = "\n" if done >= total else ""
            self.stderr.write(f"\r{stage} {done}/{total}  ETA {eta:4.0f} s {end}")
            self.stderr.flush()

        return show

    def error(self, err: ProfileError) -> None:
        """One line on stderr: text, or a JSON object under --json."""
        if self.json_mode:
            payload = {"error": {"code": err.code, "message": err.message, "hint": err.hint}}
            self.stderr.write(json.dumps(payload) + "\n")
        else:
            hint = f" ({err.hint})" if err.hint else ""
            self.stderr.write(f"{err.message}{hint}\n")

    def error_line(self, code: str, message: str) -> None:
        """A one-line message that has no ProfileError behind it (interrupts, crashes)."""
        if self.json_mode:
            self.stderr.write(
                json.dumps({"error": {"code": code, "message": message, "hint": None}}) + "\n"
            )
        else:
            self.stderr.write(message + "\n")
