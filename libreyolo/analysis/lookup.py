"""`get`: one metric of the flat map, or the list of names. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, NamedTuple

from libreyolo.errors import UnknownNameError

if TYPE_CHECKING:
    from libreyolo.document.model import Scalar


# NamedTuples, not dataclasses: `get` is the tight-loop reader and dataclasses cost its start-up.
class MetricValue(NamedTuple):
    name: str
    value: Scalar
    kind: ClassVar[str] = "metric"


class MetricList(NamedTuple):
    names: tuple[str, ...]
    kind: ClassVar[str] = "metric-list"


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
