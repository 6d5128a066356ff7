"""What `libreyolo profile report` returns: the page it wrote. The text view prints the path
(a result: stdout), `--json` the path, the page kind, its size and the inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from libreyolo.analysis.result_kind import ResultKind


@dataclass(frozen=True, slots=True)
class ReportWritten:
    result_kind: ClassVar[ResultKind] = ResultKind.REPORT
    path: str
    page: str  # "profile" | "compare" | "sweep"
    num_bytes: int
    inputs: tuple[str, ...]
    num_points: int | None = None  # a sweep page: the points it shows
