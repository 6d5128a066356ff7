"""The subcommand listing that `libreyolo profile` prints with no subcommand."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from libreyolo.analysis.result_kind import ResultKind


@dataclass(frozen=True, slots=True)
class SubcommandList:
    result_kind: ClassVar[ResultKind] = ResultKind.SUBCOMMANDS
    entries: tuple[tuple[str, str], ...]  # (name, one-line help)
