"""The only place that writes to stdout and stderr. Results go to stdout; people's messages to
stderr, one line each. Under `--json` stdout carries exactly one JSON document.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import TextIO

from rich.console import Console

from libreyolo.errors import ProfileError
from libreyolo.render.jsondoc import Source, to_json_text
from libreyolo.render.text import to_renderable

DEFAULT_WIDTH = 100


@dataclass
class Output:
    """Where results and messages go; tests inject StringIO streams."""

    stdout: TextIO
    stderr: TextIO
    json_mode: bool = False
    color: bool = False
    width: int | None = None

    @classmethod
    def for_terminal(cls, *, json_mode: bool, no_color: bool) -> Output:
        """The real streams; colour only on a terminal and without NO_COLOR/--no-color."""
        color = sys.stdout.isatty() and not no_color and "NO_COLOR" not in os.environ
        return cls(sys.stdout, sys.stderr, json_mode=json_mode, color=color)

    def emit(self, result: object, source: Source) -> None:
        """Write one result to stdout, as JSON or as text."""
        if self.json_mode:
            self.stdout.write(to_json_text(result, source=source))
            return
        console = Console(file=self.stdout, highlight=False, no_color=not self.color,
                          color_system="auto" if self.color else None, soft_wrap=True,
                          width=self.width or (None if self.color else DEFAULT_WIDTH))
        console.print(to_renderable(result))

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
            self.stderr.write(json.dumps({"error": {"code": code, "message": message,
                                                    "hint": None}}) + "\n")
        else:
            self.stderr.write(message + "\n")
