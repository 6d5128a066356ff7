"""The subcommand listing that `libreyolo profile` prints with no subcommand."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class SubcommandList:
    kind: ClassVar[str] = "subcommands"
    entries: tuple[tuple[str, str], ...]  # (name, one-line help)
