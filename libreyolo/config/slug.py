"""`slug`: a config value as one part of a folder name (the `${slug:...}` resolver the sweep's
point folders use). Pure, stdlib only."""

from __future__ import annotations

import hashlib
from urllib.parse import quote

SLUG_SAFE = "._+-"  # kept as they are in a folder name, besides letters and digits
MAX_SLUG_CHARS = 40  # a longer value keeps its head and a digest of the whole


def slug(value: object) -> str:
    """`value` as a folder-name part: letters, digits and `._+-` kept, every other character
    percent-encoded (so distinct values stay distinct and no `/` makes a subfolder; booleans as
    1 and 0, as the `flag` resolver writes them); a long value is cut to its head and a digest
    of the whole."""
    text = str(int(value) if isinstance(value, bool) else value)
    safe = quote(text, safe=SLUG_SAFE) or "%00"  # the empty value: still one part
    if len(safe) <= MAX_SLUG_CHARS:
        return safe
    digest = hashlib.sha1(safe.encode()).hexdigest()[:8]
    return f"{safe[: MAX_SLUG_CHARS - 9]}~{digest}"
