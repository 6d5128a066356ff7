"""Numbers a measurement cannot produce: refused when a profile is read, with the field's path.

`json.loads` accepts `NaN`, `Infinity` and `-Infinity` (and turns `1e999` into infinity), and
a file can say that a step took -3 ms or that p50 is above p99. The writer never does (the codec
refuses non-finite values, times and counts are measured), so such a file was damaged or edited,
and reading it on would print nonsense or crash a reader: AnalysisError (exit 1) instead.

Rules, on the document as plain JSON data (after the type check):
* every number, anywhere (free-form maps included), is finite, and integers fit in 64 bits (all
  msgspec, the writer, can write);
* struct fields that hold a time, size or count (keys ending `_ms`, `_us`, `_bytes`, or starting
  `num_`) are not negative, nor is any number inside them (`latency_ms` lists, `phase_ms` maps);
  `start_us` is a timestamp and may be anything;
* in a metric map (`metrics`, `trials[].metrics`) numbers named as a time, rate, count or
  fraction (see `_is_metric_quantity`) are numbers or null, never negative
  (`profiler_overhead_pct` may be: the profiler can make a run faster), and
  `latency_p50_ms <= latency_p90_ms <= latency_p99_ms`;
* `run.config`, `verdict.evidence` and `legacy_v1` are free-form: finite numbers only.

The sweep's files are checked by the field rules their structs declare (`rules.py`), on the same
principle: a value no writer produces is one line naming its field.

Pure and small: `get` runs `check_metrics` on every call, so this module imports nothing heavy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from itertools import pairwise
from typing import Any, TypeVar

from libreyolo.errors import AnalysisError

HINT = "libreyolo writes finite, non-negative times and counts; the file was damaged or edited"
_INT_RANGE = (-(2**63), 2**64 - 1)  # int64 .. uint64
_QUANTITY_SUFFIXES = ("_ms", "_us", "_bytes")
_TIMESTAMPS = frozenset({"start_us"})
_FREE_FORM = frozenset({"config", "evidence", "legacy_v1"})
_METRIC_SUFFIXES = (
    "_ms",
    "_us",
    "_mb",
    "_per_s",
    "_img_s",
    "_per_step",
    "_per_launch",
    "_frac",
    "_util",
    "_kernels",
    "_ops",
    "_std",
)
_METRIC_NAMES = frozenset({"tensorcore_pct", "latency_n", "img_per_s_n", "num_steps"})
PERCENTILES = ("latency_p50_ms", "latency_p90_ms", "latency_p99_ms")
MetricMap = TypeVar("MetricMap", bound=Mapping[str, object])


def _is_quantity(key: str) -> bool:
    return (key.endswith(_QUANTITY_SUFFIXES) or key.startswith("num_")) and key not in _TIMESTAMPS


def _is_metric_quantity(name: str) -> bool:
    return name.endswith(_METRIC_SUFFIXES) or name.startswith("num_") or name in _METRIC_NAMES


def _number_problem(value: Any, path: str, non_negative: bool) -> str | None:
    """What is wrong with one number (None when nothing is)."""
    if type(value) is float:
        if value != value:
            return f"{path} is NaN"
        if math.isinf(value):
            return f"{path} is {'Infinity' if value > 0 else '-Infinity'}"
    elif type(value) is int:
        if not _INT_RANGE[0] <= value <= _INT_RANGE[1]:
            return f"{path} is too large (more than 64 bits)"
    else:
        return None
    return f"{path} is negative ({value!r})" if non_negative and value < 0 else None


def _problem(value: Any, path: str, non_negative: bool, free: bool) -> str | None:
    """The first problem in a value and everything inside it, depth first."""
    if isinstance(value, dict):
        for key, item in value.items():
            name = str(key)
            where = f"{path}.{name}" if path else name
            if free or name in _FREE_FORM:
                found = _problem(item, where, False, True)
            elif name == "metrics" and isinstance(item, dict):
                found = metrics_problem(item, where)
            else:
                found = _problem(item, where, non_negative or _is_quantity(name), False)
            if found:
                return found
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _problem(item, f"{path}[{index}]", non_negative, free)
            if found:
                return found
        return None
    return _number_problem(value, path, non_negative)


def metrics_problem(metrics: Mapping[str, object], path: str = "metrics") -> str | None:
    """The first problem in a flat metric map (None when there is none)."""
    for name, value in metrics.items():
        quantity = _is_metric_quantity(name)
        if quantity and not (value is None or type(value) in (int, float)):
            return f"{path}.{name} is {type(value).__name__}, not a number"
        found = _number_problem(value, f"{path}.{name}", quantity)
        if found:
            return found
    # A percentile that got here is a number or null: the loop above refused anything else.
    known = [(name, v) for name in PERCENTILES if isinstance(v := metrics.get(name), int | float)]
    for (low_name, low), (high_name, high) in pairwise(known):
        if low > high:
            return f"{path}.{low_name} ({low!r}) > {path}.{high_name} ({high!r})"
    return None


def _fail(origin: str, problem: str) -> AnalysisError:
    return AnalysisError(f"failed to analyse {origin}: invalid profile: {problem}", hint=HINT)


def check_document(raw: Mapping[str, object], *, origin: str) -> None:
    """AnalysisError (exit 1) naming the first field a measurement cannot have produced."""
    problem = _problem(raw, "", False, False)
    if problem:
        raise _fail(origin, problem)


def check_numbers(raw: Any, *, origin: str) -> None:
    """AnalysisError when any number in `raw` is not finite or too large (no other rule): for
    documents of an older schema, checked before they are upgraded."""
    problem = _problem(raw, "", False, True)
    if problem:
        raise _fail(origin, problem)


def check_metrics(metrics: MetricMap, *, origin: str) -> MetricMap:
    """`metrics` itself, or AnalysisError: `get`'s fast path reads the map alone."""
    problem = metrics_problem(metrics)
    if problem:
        raise _fail(origin, problem)
    return metrics
