"""`get`: one metric of the flat map, or the list of names. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from libreyolo.document.model import Profile, Scalar
from libreyolo.errors import UnknownNameError


@dataclass(frozen=True, slots=True)
class MetricValue:
    kind: ClassVar[str] = "metric"
    name: str
    value: Scalar


@dataclass(frozen=True, slots=True)
class MetricList:
    kind: ClassVar[str] = "metric-list"
    names: tuple[str, ...]


def metric_names(profile: Profile) -> MetricList:
    """Every metric the profile offers, sorted."""
    return MetricList(tuple(sorted(profile.metrics)))


def get_metric(profile: Profile, name: str, *, source: str) -> MetricValue:
    """One metric; an unknown name is a usage error pointing at the listing (1.6.0 wording)."""
    if name not in profile.metrics:
        raise UnknownNameError(
            f"unknown metric '{name}'. run 'profile get {source}' to list metrics."
        )
    return MetricValue(name, profile.metrics[name])
