"""Bring raw profile dicts up to the current schema, one version at a time. Never writes files.

History
  v1  libreyolo 1.6.0 `libreyolo.profile.analysis/v1` (profile.json, profile_repeat.json,
      infer_repeat.json): per-step aggregates only, inclusive op times; read only.
  v2  `libreyolo.profile/v2`: raw samples, totals over the analysed window with units in every
      key, self op time, `run.mode` always set, verdict with evidence and levers.
  v2  (additive) a top-level `notes` list: everything the run noted about itself. Older v2
      files kept those notes in `run.config.notes` and copied them into `trace.notes` when
      there was a trace; on read they are lifted into `notes` (`lift_notes`), so both shapes
      read the same.

A migrated v1 document keeps v1's `metrics` map and verdict exactly (so `get` prints the same
values) and its other scalar aggregates under `legacy_v1`; tables are converted from per-step
values to window totals by multiplying with v1's analysed step count.

Raw documents are `JsonObject`s: every value is narrowed (`isinstance`) before it is used, and
a value of the wrong shape raises TypeError, which `upgrade` turns into one error line.
"""

from __future__ import annotations

from collections.abc import Callable

from libreyolo.document.json_value import JsonObject, JsonValue
from libreyolo.document.run_facts import lift_run_facts
from libreyolo.document.validate import check_numbers
from libreyolo.document.version import SCHEMA
from libreyolo.errors import AnalysisError, SchemaTooNewError

CURRENT = 2
_V1_TAG = "libreyolo.profile.analysis/v1"
_V2_PREFIX = "libreyolo.profile/v"
_V1_TABLE_KEYS = frozenset(
    {"kernels", "ops", "kernels_by_phase", "ops_by_phase", "top_kernels", "categories", "phases"}
)


def schema_version(raw: object, *, origin: str) -> int:
    """The major version a raw document declares; AnalysisError when it declares none we know."""
    tag = raw.get("schema") if isinstance(raw, dict) else None
    if not isinstance(tag, str):
        raise AnalysisError(f"failed to analyse {origin}: not a libreyolo profile (no schema tag)")
    if tag == _V1_TAG:
        return 1
    number = tag.removeprefix(_V2_PREFIX)
    if tag.startswith(_V2_PREFIX) and number.isascii() and number.isdigit() and int(number) >= 2:
        return int(number)
    raise AnalysisError(f"failed to analyse {origin}: unknown profile schema '{tag}'")


def upgrade(raw: JsonObject, *, origin: str) -> JsonObject:
    """Return `raw` in the current schema; the input is never modified (a current document
    whose notes are where they belong is returned as it is)."""
    version = schema_version(raw, origin=origin)
    if version > CURRENT:
        raise SchemaTooNewError(
            f"failed to analyse {origin}: profile schema v{version} is newer than v{CURRENT}",
            hint="upgrade libreyolo to read this file",
        )
    if version == 1 and not isinstance(raw.get("metrics"), dict):
        raise AnalysisError(
            f"failed to analyse {origin}: invalid libreyolo 1.6.0 profile (no 'metrics' map)"
        )
    if version < CURRENT:  # NaN would break the migration's arithmetic: refuse it first
        check_numbers(raw, origin=origin)
    for step in range(version, CURRENT):
        try:
            raw = _UPGRADES[step](raw)
        except (ArithmeticError, AttributeError, KeyError, TypeError, ValueError) as err:
            # A mistyped old file (a list where v1 wrote an object...): one line, not a crash.
            raise AnalysisError(
                f"failed to analyse {origin}: invalid schema v{step} profile ({err})"
            ) from err
    return lift_run_facts(lift_notes(raw))  # notes first: they leave run.config


def lift_notes(raw: JsonObject) -> JsonObject:
    """A v2 document with its run's notes in the top-level `notes` list.

    Files written before that list kept the notes in `run.config.notes` and, when traced, also
    appended them to `trace.notes` after the analyser's own caveats. Those are moved: `notes`
    becomes the config's list, the copies leave `trace.notes` (which keeps the analyser's) and
    the key leaves `run.config`. A document that has `notes`, or no list of strings under
    `run.config.notes`, is returned as it is (a mistyped `notes` is the converter's to refuse).
    """
    if "notes" in raw:
        return raw
    run = raw.get("run")
    config = run.get("config") if isinstance(run, dict) else None
    stored = config.get("notes") if isinstance(config, dict) else None
    if not isinstance(run, dict) or not isinstance(config, dict) or not isinstance(stored, list):
        return raw
    notes = [note for note in stored if isinstance(note, str)]
    if len(notes) != len(stored):
        return raw
    kept_config: JsonObject = {k: v for k, v in config.items() if k != "notes"}
    lifted: JsonObject = {**raw, "notes": list(notes), "run": {**run, "config": kept_config}}
    trace = raw.get("trace")
    caveats = trace.get("notes") if isinstance(trace, dict) else None
    if isinstance(trace, dict) and isinstance(caveats, list):
        lifted["trace"] = {**trace, "notes": [note for note in caveats if note not in notes]}
    return lifted


def _num(value: object, default: float = 0.0) -> float:
    return (
        float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default
    )


def _count(value: object, n: int) -> int:
    return round(_num(value) * n)


def _object(value: JsonValue) -> JsonObject:
    """An object where v1 wrote one, `{}` where it wrote nothing (null, or an empty value)."""
    if isinstance(value, dict):
        return value
    if not value:
        return {}
    raise TypeError(f"expected an object, got {type(value).__name__}")


def _rows(value: JsonValue) -> list[JsonObject]:
    """The objects of a list where v1 wrote one, `[]` where it wrote nothing."""
    if not value:
        return []
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    rows = []
    for row in value:
        if not isinstance(row, dict):
            raise TypeError(f"expected an object in a list, got {type(row).__name__}")
        rows.append(row)
    return rows


def _v1_phase_calls(by_phase: JsonValue, name_key: str, n: int, *, ops: bool) -> JsonObject:
    """v1 `kernels_by_phase`/`ops_by_phase` rows -> {name: {phase: CallStat dict}}."""
    calls: dict[str, JsonObject] = {}
    for phase, rows in _object(by_phase).items():
        for row in _rows(rows):
            stat: JsonObject = {
                "total_ms": _num(row.get("ms_per_step")) * n,
                "num_calls": _count(row.get("count_per_step"), n),
            }
            if ops:
                stat["self_ms"] = None
            calls.setdefault(str(row.get(name_key)), {})[phase] = stat
    return dict(calls)


def _v1_kernels(raw: JsonObject, n: int) -> list[JsonValue]:
    phases = _v1_phase_calls(raw.get("kernels_by_phase"), "raw_name", n, ops=False)
    rows: list[JsonValue] = []
    for row in _rows(raw.get("kernels")):
        name = str(row.get("raw_name") or row.get("kernel"))
        rows.append(
            {
                "name": name,
                "category": str(row.get("category", "other")),
                "tensor_core": bool(row.get("tensorcore", False)),
                "total_ms": _num(row.get("ms_per_step")) * n,
                "num_calls": _count(row.get("count_per_step"), n),
                "phases": phases.get(name, {}),
            }
        )
    return rows


def _v1_ops(raw: JsonObject, n: int) -> list[JsonValue]:
    phases = _v1_phase_calls(raw.get("ops_by_phase"), "op", n, ops=True)
    return [
        {
            "name": str(row.get("op")),
            "self_ms": None,  # v1 stored inclusive time only
            "total_ms": _num(row.get("ms_per_step")) * n,
            "num_calls": _count(row.get("count_per_step"), n),
            "phases": phases.get(str(row.get("op")), {}),
        }
        for row in _rows(raw.get("ops"))
    ]


def _v1_phases(raw: JsonObject, n: int) -> list[JsonValue]:
    return [
        {
            "name": str(row.get("phase")),
            "gpu_ms": _num(row.get("gpu_ms_per_step")) * n,
            "cpu_ms": None,
            "wall_ms_per_step": row.get("wall_ms_per_step"),
            "num_kernels": _count(row.get("kernels_per_step"), n),
            "num_ops": _count(row.get("ops_per_step"), n),
            "num_unique_kernels": int(_num(row.get("unique_kernels"))),
        }
        for row in _rows(raw.get("phases"))
    ]


# What the migration says about every 1.6.0 file: its op table counts nested ops in each parent.
INCLUSIVE_OPS_NOTE = "migrated from a libreyolo 1.6.0 profile: op times are inclusive"
# A 1.6.0 run without a trace (--no-trace, or a failed export) still stored per-stage walls; they
# are kept as phases so `phases` reads them as 1.6.0 did, but nothing here was traced.
NO_TRACE_NOTE = (
    "1.6.0 recorded no trace for this run: the phases hold its synced stage walls only, and "
    "every GPU figure is 0 by construction"
)


def _v1_notes(raw: JsonObject) -> list[JsonValue]:
    """The migration's own notes about a 1.6.0 file: the profile's, not the trace analyser's."""
    notes: list[JsonValue] = [INCLUSIVE_OPS_NOTE]
    return notes if raw.get("trace") else [*notes, NO_TRACE_NOTE]


def _v1_trace(raw: JsonObject) -> JsonObject:
    window = _object(raw.get("window"))
    n = max(int(_num(window.get("real_steps"), 1.0)), 1)
    kernel_ms = _num(raw.get("gpu_busy_ms_per_step")) * n  # v1 busy is a sum of kernel time
    peak_mb = raw.get("peak_vram_mb")
    return {
        "source": "profiler_steps",
        "num_steps": n,
        "window_ms": _num(window.get("wall_ms")),
        "has_gpu": bool(raw.get("kernels")) or kernel_ms > 0,
        "gpu_busy_ms": kernel_ms,
        "gpu_kernel_busy_ms": kernel_ms,
        "device_window_ms": _num(window.get("wall_ms")),
        "device_busy_ms": kernel_ms,
        "memcpy_ms": _num(raw.get("memcpy_ms_per_step")) * n,
        "kernel_sum_ms": kernel_ms,
        "num_kernels": _count(raw.get("kernels_per_step"), n),
        "tensor_core_ms": kernel_ms * _num(raw.get("tensorcore_pct")) / 100.0,
        "launches": {"num_launches": _count(raw.get("launches_per_step"), n)},
        "memory": {
            "peak_allocated_bytes": None if peak_mb is None else round(_num(peak_mb) * 1e6),
            "num_mallocs": _count(raw.get("cuda_mallocs_per_step"), n),
            "thrash": bool(raw.get("memory_pressure", False)),
        },
        "phases": _v1_phases(raw, n),
        "categories": [
            {
                "name": str(c.get("name")),
                "total_ms": _num(c.get("ms_per_step")) * n,
                "num_kernels": 0,
            }
            for c in _rows(raw.get("categories"))
        ],
        "kernels": _v1_kernels(raw, n),
        "ops": _v1_ops(raw, n),
    }


def _v1_run(raw: JsonObject, mode: str) -> JsonObject:
    stored = raw.get("config")
    config: JsonObject = stored if isinstance(stored, dict) else {}
    amp = config.get("half") if mode == "inference" else config.get("amp")
    return {
        "mode": mode,
        "model": raw.get("model"),
        "weights": config.get("model") if mode == "inference" else None,
        "device": config.get("device"),
        "batch": config.get("batch"),
        "imgsz": config.get("imgsz"),
        "amp": amp if isinstance(amp, bool) else None,
        "config": config,
    }


def _v1_metrics(raw: JsonObject) -> JsonObject:
    """v1's metric map; repeat files report the trial mean (v1's `metrics.img_per_s` kept the
    last trial's value there while the file's headline held the mean)."""
    metrics = dict(_object(raw.get("metrics")))
    if raw.get("img_per_s_trials"):
        metrics["img_per_s"] = raw.get("img_per_s")
        if "throughput_img_s" in metrics:
            metrics["throughput_img_s"] = raw.get("img_per_s")
        metrics["img_per_s_std"] = raw.get("img_per_s_std")
        metrics["img_per_s_n"] = raw.get("img_per_s_n")
    return metrics


def _v1_trials(raw: JsonObject) -> list[JsonValue]:
    trials = raw.get("img_per_s_trials")
    if not trials:
        return []
    if not isinstance(trials, list):
        raise TypeError(f"expected a list of trials, got {type(trials).__name__}")
    return [{"index": i, "metrics": {"img_per_s": value}} for i, value in enumerate(trials)]


def _v1_to_v2(raw: JsonObject) -> JsonObject:
    """libreyolo 1.6.0 -> v2; keeps v1's metric values and verdict exactly."""
    mode = "inference" if raw.get("mode") == "inference" else "training"
    stored = raw.get("latency")
    latency: JsonObject = stored if isinstance(stored, dict) else {}
    return {
        "schema": SCHEMA,
        "kind": "infer" if mode == "inference" else "train",
        "created": None,
        "tool": {"name": "libreyolo", "version": "1.6.0"},
        "run": _v1_run(raw, mode),
        "window": {"num_unsynced": int(_num(latency.get("n")))},
        "trace": _v1_trace(raw),
        "notes": _v1_notes(raw),
        "metrics": _v1_metrics(raw),
        "verdict": {
            "bound": str(raw.get("bound") or "unknown"),
            "why": str(raw.get("bound_why") or ""),
        },
        "trials": _v1_trials(raw),
        "artifacts": {"trace": raw.get("trace")},
        "legacy_v1": {k: v for k, v in raw.items() if k not in _V1_TABLE_KEYS},
    }


_UPGRADES: dict[int, Callable[[JsonObject], JsonObject]] = {1: _v1_to_v2}
