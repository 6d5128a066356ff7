"""Colour for the text views on a terminal: plain lines in, styled rich Text out.

Only imported when stdout is a colour terminal, so piped and scripted readers never load rich.
Lines are appended as plain text (never parsed as markup: kernel names contain `[` and `]`).
"""

from __future__ import annotations

from rich.text import Text

# (line prefix, style): the first match styles the whole line.
LINE_STYLES = (
    ("** MEMORY-PRESSURE", "bold red"),
    (">> ", "bold yellow"),
    ("warning:", "yellow"),
    ("note", "dim"),
    ("trace note", "dim"),
    ("   levers:", "cyan"),
    ("kernel mix:", "bold"),
    ("top kernels/step:", "bold"),
    ("recommended", "bold green"),  # the sweep table's pick per imgsz
)
BAR_STYLE = "green"


def styled(lines: list[str]) -> Text:
    """The lines as one rich Text, styled by their prefixes; category bars in colour."""
    text = Text(end="")
    for line in lines:
        style = next((s for prefix, s in LINE_STYLES if line.startswith(prefix)), "")
        text.append(line + "\n", style=style)
    text.highlight_regex(r"█+", BAR_STYLE)
    return text
