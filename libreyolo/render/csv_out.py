"""A tabular result as CSV: the rows of its `--json` view, one line each, under a header.

Role: `--csv` of `kernels`, `ops`, `phases`, `compare` and `summary <sweep dir>`. The rows are
taken from `jsondoc.to_jsonable`, so every value is the one `--json` prints (same rounding, same
rows, same order, same filters); only the layout differs. RFC 4180 through the stdlib `csv`
module, `\\n` line ends. A nested object becomes dotted columns (`metrics.img_per_s`); a cell
is its value's JSON text (`true`, `0.25`, `["batch=4"]`), a string bare, null empty; control
characters are escaped as the text views do (`render/safe.py`): a CSV is read on a terminal
too, and `--json` carries the exact strings. The columns are every key some row has,
in the rows' own order. docs/csv-format.md lists them per reader.

Must not: round, reorder or filter what the JSON view holds, or import anything beyond the
standard library and the render layer (readers start in a tenth of a second).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from libreyolo.analysis.result_kind import ResultKind, kind_of
from libreyolo.render.jsondoc import ReadFrom, to_jsonable
from libreyolo.render.safe import safe_text

Row = dict[str, Any]
# compare's [before, after] pairs of its significance keys: two columns each
PAIRS = ("std", "n", "mean")
PAIR_SIDES = ("before", "after")
# compare's top-level keys that are not one metric's delta (in the JSON; not CSV rows)
NOT_DELTAS = ("before", "after", "gate", "warnings", "changes", "trainer_gap", "scaling")


# The columns of the fixed tables, so that one with no row (a CPU profile's kernels) still
# has its header; tests/render/test_csv.py checks them against the JSON rows' keys.
KERNEL_COLUMNS = (
    "kernel",
    "raw_name",
    "category",
    "tensorcore",
    "ms_per_step",
    "pct_of_gpu",
    "count_per_step",
    "name",
)
OP_COLUMNS = (
    "op",
    "ms_per_step",
    "pct_of_cpu_ops",
    "count_per_step",
    "self_ms_per_step",
    "total_ms_per_step",
)
PHASE_COLUMNS = (
    "phase",
    "gpu_ms_per_step",
    "wall_ms_per_step",
    "kernels_per_step",
    "ops_per_step",
    "unique_kernels",
)

SHARE_COLUMNS = ("change_points", "moved")  # a share's delta only: img/s never has them
# compare's columns: a delta's, a share's, a tested one's
COMPARE_COLUMNS = (
    "metric",
    "before",
    "after",
    "change",
    *SHARE_COLUMNS,
    *(f"{key}.{side}" for key in ("std", "n") for side in PAIR_SIDES),
    "significant",
    "significance",
    *(f"mean.{side}" for side in PAIR_SIDES),
    "standard_error",
    "threshold_multiplier",
    "df",
)


# compare of two sweeps: the columns after each point's axes
SWEEP_COMPARE_COLUMNS = (
    "point",
    "not_compared",
    *(f"img_per_s.{c}" for c in COMPARE_COLUMNS[1:] if c not in SHARE_COLUMNS),
    *(f"gate.{c}" for c in ("metric", "threshold_pct", "change_pct", "significant", "failed")),
)


def _sweep_columns() -> tuple[str, ...]:
    """A sweep point's columns in `SweepRow`'s field order (the JSON sorts its keys), its
    headline metrics as `metrics.X`: every field, whether or not this sweep wrote it."""
    from dataclasses import fields

    from libreyolo.document.sweep_model import HeadlineMetrics, SweepRow

    metrics = [f"metrics.{f.name}" for f in fields(HeadlineMetrics)]
    columns = ["point"]
    for f in fields(SweepRow):
        columns += metrics if f.name == "metrics" else [f.name]
    return tuple(columns)


Table = tuple[tuple[str, ...], list[Row]]  # the columns every such table has, and the rows


def _kernels(doc: Any) -> Table:
    return KERNEL_COLUMNS, list(doc["kernels"])


def _ops(doc: Any) -> Table:
    return OP_COLUMNS, list(doc["ops"])


def _phases(doc: Any) -> Table:
    return PHASE_COLUMNS, list(doc["phases"])


def _split_pairs(delta: Mapping[str, Any] | None) -> Row:
    """A delta's keys, its [before, after] pairs (`std`, `n`, `mean`) as two keys each; null (a
    metric neither side has, e.g. latency of training) has none."""
    row: Row = {}
    for key, value in (delta or {}).items():
        if key in PAIRS:
            row |= {f"{key}.{side}": v for side, v in zip(PAIR_SIDES, value, strict=True)}
        else:
            row[key] = value
    return row


def _compare(doc: Any) -> Table:
    """One row per compared metric, in the JSON's order; `compute`'s deltas as `compute.X`
    (its `same_work` flag is no delta: --json only); the tensor peak and its categories as
    `tensor_memory.peak_mb` and `tensor_memory.X` (no rows where neither side tracked one)."""
    rows = []
    for key, value in doc.items():
        if key in NOT_DELTAS:
            continue
        if key == "compute":
            rows += [
                {"metric": f"compute.{name}"} | _split_pairs(delta)
                for name, delta in value.items()
                if isinstance(delta, dict)
            ]
        elif key == "tensor_memory":
            if value is not None:
                deltas = {"peak_mb": value["peak_mb"], **value["categories"]}
                rows += [
                    {"metric": f"tensor_memory.{name}"} | _split_pairs(delta)
                    for name, delta in deltas.items()
                ]
        else:
            rows.append({"metric": key} | _split_pairs(value))
    return COMPARE_COLUMNS, rows


def _sweep(doc: Any) -> Table:
    """sweep.json's points, in its (sorted) order, each named by its folder in `point`."""
    return _sweep_columns(), [{"point": name} | row for name, row in doc["points"].items()]


def _sweep_compare(doc: Any) -> Table:
    """One row per matched point: its axes (the swept keys: the rows name those columns), then
    img/s's tested delta as `img_per_s.X` and its gate as `gate.X`, empty where not compared."""
    rows = [row | {"img_per_s": _split_pairs(row["img_per_s"])} for row in doc["points"]]
    return SWEEP_COMPARE_COLUMNS, rows


_TABLES: dict[ResultKind, Callable[[Any], Table]] = {
    ResultKind.KERNELS: _kernels,
    ResultKind.OPS: _ops,
    ResultKind.PHASES: _phases,
    ResultKind.COMPARE: _compare,
    ResultKind.SWEEP: _sweep,
    ResultKind.SWEEP_COMPARE: _sweep_compare,
}


def _flatten(row: Mapping[str, Any], prefix: str = "") -> Row:
    flat: Row = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat |= _flatten(value, f"{name}.")
        else:
            flat[name] = value
    return flat


def _header(rows: Iterable[Row]) -> list[str]:
    """Every key of every row, each new one placed after the key that precedes it in its row;
    a column that another row holds as an object (`img_per_s` null where others compared it)
    gives way to that object's columns."""
    header: list[str] = []
    for row in rows:
        at = 0
        for key in row:
            if key in header:
                at = header.index(key) + 1
            else:
                header.insert(at, key)
                at += 1
    return [c for c in header if not any(h.startswith(f"{c}.") for h in header)]


def _cell(value: Any) -> str:
    """A value's JSON text (`true`, `0.25`, `[1, null]`), a string bare, null empty."""
    if value is None:
        return ""
    return safe_text(value if isinstance(value, str) else json.dumps(value, allow_nan=False))


def to_csv_text(result: object, *, source: ReadFrom = None) -> str:
    """The `--csv` text for one tabular result: a header line, then one line per JSON row."""
    kind = kind_of(result)
    table = None if kind is None else _TABLES.get(kind)
    if table is None:
        raise TypeError(f"no CSV view for {type(result).__name__}")
    columns, json_rows = table(to_jsonable(result, source))
    rows = [_flatten(row) for row in json_rows]
    header = _header([dict.fromkeys(columns), *rows])
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([_cell(row.get(column)) for column in header] for row in rows)
    return text.getvalue()
