"""Whether a page on disk is one of ours: the report pages carry the generator tag
(`page.GENERATOR`) in their head, so `libreyolo profile report` and `libreyolo-sweep` replace
only pages they wrote.

Reads at most the head of a regular file (never a FIFO's open). Must not write anything.
"""

from __future__ import annotations

from pathlib import Path

from libreyolo.document.limits import open_regular
from libreyolo.errors import ProfileError
from libreyolo.render.html.page import GENERATOR

OUR_MARK = f'<meta name="generator" content="{GENERATOR}">'.encode()
HEAD_BYTES = 4096  # the tag sits in the first few hundred bytes of every page we write


def is_our_page(path: Path) -> bool:
    """Whether `path` is a page a libreyolo report writer wrote (its head carries the tag)."""
    try:
        with open_regular(str(path), 1 << 30) as handle:
            return OUR_MARK in handle.read(HEAD_BYTES)
    except (OSError, ProfileError):
        return False
