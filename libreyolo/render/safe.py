"""Strings from files made safe for a terminal: every control character shown as an escape.

Names in a profile, trace or sweep file (kernels, ops, the model, the verdict's reason, notes,
sweep points) are data, and a terminal obeys the control characters in them: ESC sequences clear
the screen or set the window title, CR and BS overwrite what was printed, and a newline inside a
name prints a line of its own (a fake `>> COMPUTE:` verdict). The text views pass every such
string through `safe_text`; `to_lines` and `boundary/output.py` apply it once more to every line, so
nothing a view forgets reaches the terminal raw.

The rule: C0 (U+0000-U+001F), DEL (U+007F) and C1 (U+0080-U+009F) controls, the Unicode line
and paragraph separators (U+2028, U+2029) and the bidirectional embeddings, overrides and
isolates (U+202A-U+202E, U+2066-U+2069, which reorder what is shown: "Trojan Source"), and lone
surrogates (U+D800-U+DFFF, a `\\ud800` escape in JSON: no encoding can print them) are
written as Python escapes: `\\n`, `\\r`, `\\t`, else `\\xHH` below U+0100 and `\\uHHHH` above.
Everything else, backslashes included, is shown as it is, so the text form is not reversible:
`--json` carries the exact strings. Names longer than `NAME_CHARS` are shortened to their head
and tail around `…` (`short_name`).
"""

from __future__ import annotations

import re

NAME_CHARS = 120  # the most characters of one name a text table shows

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ELLIPSIS = "…"


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(value: object) -> str:
    """`value` as text with every control character written as a visible escape."""
    text = value if isinstance(value, str) else str(value)
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def short_name(value: object, limit: int = NAME_CHARS) -> str:
    """`safe_text(value)`, cut to at most `limit` characters: head, `…`, tail."""
    text = safe_text(value)
    if len(text) <= limit:
        return text
    tail = (limit - 1) // 3
    return text[: limit - 1 - tail] + _ELLIPSIS + text[len(text) - tail :]
