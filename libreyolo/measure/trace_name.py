"""The Chrome trace's `traceName`, set to where the file lies once its set is committed.

Role: torch's exporter writes the path it was given, the staging folder's, which no longer exists
after the swap; tools that show `traceName` (Perfetto, HTA) then name a folder the user never
sees. The key is the file's last, so only its tail is read and rewritten, whatever the trace's size.
Must not: parse or rewrite the events, or touch a file whose tail holds no `traceName`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

TAIL_BYTES = 64 * 1024  # the tail torch writes after the last event: the key and a few bytes
KEY = b'"traceName":'


def rename_trace(path: Path, final: Path) -> bool:
    """Rewrite the `traceName` at the end of the trace at `path` to `final` (made absolute);
    False when the tail holds no readable `traceName` (left as it was)."""
    size = path.stat().st_size
    start = max(0, size - TAIL_BYTES)
    with path.open("r+b") as handle:
        handle.seek(start)
        tail = handle.read()
        at = tail.rfind(KEY)
        if at < 0:
            return False
        value_at = at + len(KEY)
        text = tail[value_at:].decode("utf-8", errors="strict")
        stripped = text.lstrip()
        try:
            _, length = json.JSONDecoder().raw_decode(stripped)
        except ValueError:
            return False
        rest = stripped[length:].encode("utf-8")
        value = json.dumps(os.path.abspath(final)).encode("utf-8")
        handle.seek(start + value_at)
        handle.write(b" " + value + rest)
        handle.truncate()
    return True
