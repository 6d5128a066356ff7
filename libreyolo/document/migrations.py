"""Bring raw profile dicts up to the current schema, one version at a time. Never writes files.

History
  v1  libreyolo 1.6.0 `libreyolo.profile.analysis/v1` (profile.json, profile_repeat.json,
      infer_repeat.json): per-step aggregates only, inclusive op times; read only.
  v2  `libreyolo.profile/v2`: raw samples, totals over the analysed window with units in every
      key, self op time, `run.mode` always set, verdict with evidence and levers.

A migrated v1 document keeps v1's `metrics` map and verdict exactly (so `get` prints the same
values) and its other scalar aggregates under `legacy_v1`; tables are converted from per-step
values to window totals by multiplying with v1's analysed step count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def upgrade(raw: dict[str, Any], *, origin: str) -> dict[str, Any]:
    """Return `raw` in the current schema; the input is never modified (current input is
    returned as it is)."""
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
    return lift_run_facts(raw)


def _num(value: object, default: float = 0.0) -> float:
    return (
        float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default
    )


def _count(value: object, n: int) -> int:
    return round(_num(value) * n)


def _v1_phase_calls(
    by_phase: dict[str, Any], name_key: str, n: int, *, ops: bool
) -> dict[str, dict[str, dict[str, Any]]]:
    """v1 `kernels_by_phase`/`ops_by_phase` rows -> {name: {phase: CallStat dict}}."""
    calls: dict[str, dict[str, dict[str, Any]]] = {}
    for phase, rows in (by_phase or {}).items():
        for row in rows or []:
            stat: dict[str, Any] = {
                "total_ms": _num(row.get("ms_per_step")) * n,
                "num_calls": _count(row.get("count_per_step"), n),
            }
            if ops:
                stat["self_ms"] = None
            calls.setdefault(str(row.get(name_key)), {})[phase] = stat
    return calls


def _v1_kernels(raw: dict[str, Any], n: int) -> list[dict[str, Any]]:
    phases = _v1_phase_calls(raw.get("kernels_by_phase") or {}, "raw_name", n, ops=False)
    rows = []
    for row in raw.get("kernels") or []:
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


def _v1_ops(raw: dict[str, Any], n: int) -> list[dict[str, Any]]:
    phases = _v1_phase_calls(raw.get("ops_by_phase") or {}, "op", n, ops=True)
    return [
        {
            "name": str(row.get("op")),
            "self_ms": None,  # v1 stored inclusive time only
            "total_ms": _num(row.get("ms_per_step")) * n,
            "num_calls": _count(row.get("count_per_step"), n),
            "phases": phases.get(str(row.get("op")), {}),
        }
        for row in raw.get("ops") or []
    ]


def _v1_phases(raw: dict[str, Any], n: int) -> list[dict[str, Any]]:
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
        for row in raw.get("phases") or []
    ]


# A 1.6.0 run without a trace (--no-trace, or a failed export) still stored per-stage walls; they
# are kept as phases so `phases` reads them as 1.6.0 did, but nothing here was traced.
NO_TRACE_NOTE = (
    "1.6.0 recorded no trace for this run: the phases hold its synced stage walls only, and "
    "every GPU figure is 0 by construction"
)


def _v1_trace(raw: dict[str, Any]) -> dict[str, Any]:
    window = raw.get("window") or {}
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
            for c in raw.get("categories") or []
        ],
        "kernels": _v1_kernels(raw, n),
        "ops": _v1_ops(raw, n),
        "notes": ["migrated from a libreyolo 1.6.0 profile: op times are inclusive"]
        + ([] if raw.get("trace") else [NO_TRACE_NOTE]),
    }


def _v1_run(raw: dict[str, Any], mode: str) -> dict[str, Any]:
    stored = raw.get("config")
    config: dict[str, Any] = stored if isinstance(stored, dict) else {}
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


def _v1_metrics(raw: dict[str, Any]) -> dict[str, Any]:
    """v1's metric map; repeat files report the trial mean (v1's `metrics.img_per_s` kept the
    last trial's value there while the file's headline held the mean)."""
    metrics = dict(raw.get("metrics") or {})
    if raw.get("img_per_s_trials"):
        metrics["img_per_s"] = raw.get("img_per_s")
        if "throughput_img_s" in metrics:
            metrics["throughput_img_s"] = raw.get("img_per_s")
        metrics["img_per_s_std"] = raw.get("img_per_s_std")
        metrics["img_per_s_n"] = raw.get("img_per_s_n")
    return metrics


def _v1_to_v2(raw: dict[str, Any]) -> dict[str, Any]:
    """libreyolo 1.6.0 -> v2; keeps v1's metric values and verdict exactly."""
    mode = "inference" if raw.get("mode") == "inference" else "training"
    stored = raw.get("latency")
    latency: dict[str, Any] = stored if isinstance(stored, dict) else {}
    trials = raw.get("img_per_s_trials") or []
    return {
        "schema": SCHEMA,
        "kind": "infer" if mode == "inference" else "train",
        "created": None,
        "tool": {"name": "libreyolo", "version": "1.6.0"},
        "run": _v1_run(raw, mode),
        "window": {"num_unsynced": int(_num(latency.get("n")))},
        "trace": _v1_trace(raw),
        "metrics": _v1_metrics(raw),
        "verdict": {
            "bound": str(raw.get("bound") or "unknown"),
            "why": str(raw.get("bound_why") or ""),
        },
        "trials": [{"index": i, "metrics": {"img_per_s": value}} for i, value in enumerate(trials)],
        "artifacts": {"trace": raw.get("trace")},
        "legacy_v1": {k: v for k, v in raw.items() if k not in _V1_TABLE_KEYS},
    }


_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2}
