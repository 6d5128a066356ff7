"""`get`: one metric of the flat map, or the list of names. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from libreyolo.analysis.result_kind import ResultKind
from libreyolo.errors import UnknownNameError

if TYPE_CHECKING:
    from libreyolo.document.model import Scalar


# Small slotted classes, not dataclasses: `get` is the tight-loop reader and creating dataclasses
# costs its start-up time.
class MetricValue:
    """One metric of a profile."""

    __slots__ = ("name", "value")
    result_kind = ResultKind.METRIC

    def __init__(self, name: str, value: Scalar) -> None:
        self.name, self.value = name, value


class MetricList:
    """The names of every metric of a profile."""

    __slots__ = ("names",)
    result_kind = ResultKind.METRIC_LIST

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names


def metric_names(metrics: dict[str, Scalar]) -> MetricList:
    """Every metric of a profile's metric map, sorted."""
    return MetricList(tuple(sorted(metrics)))


def get_metric(metrics: dict[str, Scalar], name: str, *, source: str) -> MetricValue:
    """One metric; an unknown name is a usage error pointing at the listing (1.6.0 wording)."""
    if name not in metrics:
        raise UnknownNameError(
            f"unknown metric '{name}'. run 'profile get {source}' to list metrics."
        )
    return MetricValue(name, metrics[name])
