"""Results -> JSON-ready dicts with libreyolo 1.6.0's keys (new information under new keys only).

`to_json_text` writes the one document a reader prints under `--json`. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from libreyolo.analysis.result_kind import ResultKind, kind_of
from libreyolo.document.convert import to_plain
from libreyolo.document.json_value import JsonObject, JsonValue
from libreyolo.document.mode import Mode
from libreyolo.document.phases import FORWARD, POSTPROCESS, PREPROCESS
from libreyolo.render.compute_json import compute_json
from libreyolo.render.diff_json import diff_json
from libreyolo.render.trainer_gap_view import trainer_gap_json

if TYPE_CHECKING:  # result types only; importing them would cost every reader start-up time
    from libreyolo.analysis.compare import Comparison, Delta, ShareDelta, Significance
    from libreyolo.analysis.compute_compare import ComputeDeltas
    from libreyolo.analysis.contention import StepWait
    from libreyolo.analysis.gate import Gate
    from libreyolo.analysis.kernels import KernelRow, KernelTable
    from libreyolo.analysis.lookup import MetricList, MetricValue
    from libreyolo.analysis.oom_sites import OomView
    from libreyolo.analysis.ops import OpTable
    from libreyolo.analysis.outcome import ConfigView, MeasurementOutcome
    from libreyolo.analysis.phases import PhaseBreakdown
    from libreyolo.analysis.run_view import MemoryView, RunHeader
    from libreyolo.analysis.scaling import Scaling
    from libreyolo.analysis.summary import Summary
    from libreyolo.analysis.sweep import SweepView
    from libreyolo.analysis.sweep_compare import SweepComparison
    from libreyolo.analysis.tensor_compare import TensorDeltas
    from libreyolo.analysis.tensor_memory import TensorMemoryView
    from libreyolo.analysis.tracked import LoggedRuns
    from libreyolo.analysis.whatif import Projection
    from libreyolo.render.html.written import ReportWritten
    from libreyolo.render.listing import SubcommandList

RAW_NAME_CHARS = 90  # libreyolo 1.6.0's `raw_name` width

ReadFrom = str | tuple[str, str] | None  # the path(s) the result was read from


def to_json_text(result: object, *, source: ReadFrom = None) -> str:
    """The `--json` document for one result, indented like libreyolo 1.6.0."""
    return json.dumps(to_jsonable(result, source), indent=2, allow_nan=False) + "\n"


_VIEWS: dict[ResultKind, Callable[[Any, ReadFrom], Any]] = {}


def _view(
    kind: ResultKind,
) -> Callable[[Callable[[Any, ReadFrom], Any]], Callable[[Any, ReadFrom], Any]]:
    def register(func: Callable[[Any, ReadFrom], Any]) -> Callable[[Any, ReadFrom], Any]:
        _VIEWS[kind] = func
        return func

    return register


def to_jsonable(result: Any, source: ReadFrom) -> Any:
    """The JSON-ready view of a result, chosen by its `result_kind`."""
    kind = kind_of(result)
    view = None if kind is None else _VIEWS.get(kind)
    if view is None:
        raise TypeError(f"no JSON view for {type(result).__name__}")
    return view(result, source)


def _r(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def kernel_row(row: KernelRow) -> JsonObject:
    """A 1.6.0 kernel row plus the full `name`."""
    return {
        "kernel": row.label,
        "raw_name": row.name[:RAW_NAME_CHARS],
        "category": row.category,
        "tensorcore": row.tensor_core,
        "ms_per_step": round(row.ms_per_step, 4),
        "pct_of_gpu": round(row.share * 100, 2),
        "count_per_step": _r(row.num_per_step, 1),
        "name": row.name,
    }


def step_wait(row: StepWait) -> JsonObject:
    """One measured step's CPU wait (`summary` and `phases` JSON)."""
    return {
        "index": row.index,
        "synced": row.synced,
        "wall_ms": row.wall_ms,
        "cpu_ms": row.cpu_ms,
        "cpu_wait_ms": row.cpu_wait_ms,
        "cpu_wait_frac": row.cpu_wait_frac,
    }


@_view(ResultKind.KERNELS)
def _(result: KernelTable, source: ReadFrom) -> Any:
    return {
        "trace": source,
        "phase": result.phase,
        "matched": result.num_matched,
        "kernels": [kernel_row(row) for row in result.rows],
    }


@_view(ResultKind.OPS)
def _(result: OpTable, source: ReadFrom) -> Any:
    rows = [
        {
            "op": row.name,
            "ms_per_step": round(
                row.total_ms_per_step if row.self_ms_per_step is None else row.self_ms_per_step, 4
            ),
            "pct_of_cpu_ops": round(row.share * 100, 2),
            "count_per_step": _r(row.num_per_step, 1),
            "self_ms_per_step": _r(row.self_ms_per_step, 4),
            "total_ms_per_step": round(row.total_ms_per_step, 4),
        }
        for row in result.rows
    ]
    return {
        "trace": source,
        "phase": result.phase,
        "inclusive_only": result.inclusive_only,
        "ops": rows,
    }


@_view(ResultKind.MEMORY)
def _(result: TensorMemoryView, source: ReadFrom) -> Any:
    return {"trace": source, **_tensor_memory(result)}


@_view(ResultKind.OOM)
def _(result: OomView, source: ReadFrom) -> Any:
    view = to_plain(result)
    assert isinstance(view, dict)
    return {"snapshot": source, **view}


def _tensor_memory(result: TensorMemoryView) -> JsonObject:
    return {
        "peak_mb": result.peak_mb,
        "phase_at_peak": result.phase_at_peak,
        "batch": result.batch,
        "imgsz": result.imgsz,
        "largest": result.largest,
        "lever": result.lever,
        "categories": [
            {"category": row.category, "mb": row.mb, "share": round(row.share, 4)}
            for row in result.categories
        ],
        "blocks": [
            {"block": row.block, "mb": row.mb, "share": round(row.share, 4)}
            for row in result.blocks
        ],
        "peak_rss_mb": result.peak_rss_mb,
        "peak_rss_own": result.peak_rss_own,
        "vram": None if result.vram is None else to_plain(result.vram),
        "track_ms": result.track_ms,
        "prediction": None if result.prediction is None else to_plain(result.prediction),
    }


@_view(ResultKind.PHASES)
def _(result: PhaseBreakdown, source: ReadFrom) -> Any:
    rows = [
        {
            "phase": row.phase,
            "gpu_ms_per_step": round(row.gpu_ms_per_step, 3),
            "wall_ms_per_step": _r(row.wall_ms_per_step, 2),
            "kernels_per_step": _r(row.kernels_per_step, 1),
            "ops_per_step": _r(row.ops_per_step, 1),
            "unique_kernels": row.unique_kernels,
        }
        for row in result.rows
    ]
    per_step = [
        {
            "index": row.index,
            "synced": row.synced,
            "wall_ms": row.wall_ms,
            "dataload_ms": row.dataload_ms,
            "phase_ms": row.phase_ms,
            "outlier": row.outlier,
            "source": row.source,
        }
        for row in result.per_step
    ]
    return {
        "trace": source,
        "phases": rows,
        "steps": [step_wait(row) for row in result.steps],
        "per_step": per_step,
        "comm": None if result.comm is None else to_plain(result.comm),
    }


def _delta(delta: Delta | None) -> JsonObject | None:
    if delta is None:
        return None
    change = delta.change
    return {
        "before": delta.before,
        "after": delta.after,
        "change": None if change is None else round(change, 4),
    }


def _share_delta(delta: ShareDelta) -> JsonObject:
    """A share's delta: `change` stays null (no ratio of shares); `change_points` is the move in
    percentage points and `moved` says whether it passed compare's noise floor."""
    return {
        "before": delta.before,
        "after": delta.after,
        "change": None,
        "change_points": delta.change_points,
        "moved": delta.moved,
    }


def _significance(sig: Significance) -> JsonObject:
    """img/s's 1.6.0 significance keys (and any tested delta's): `significant` null when a side
    has no trials."""
    return {
        "std": [_r(s, 3) for s in sig.std],
        "n": list(sig.n),
        "significant": sig.significant,
        "significance": sig.text,
        "mean": [_r(sig.mean_before, 3), _r(sig.mean_after, 3)],
        "standard_error": _r(sig.standard_error, 4),
        "threshold_multiplier": _r(sig.multiplier, 4),
        "df": _r(sig.df, 2),
    }


def _tested(delta: Delta | None, sig: Significance | None) -> JsonObject | None:
    view = _delta(delta)
    return None if view is None or sig is None else view | _significance(sig)


def _compute_deltas(deltas: ComputeDeltas) -> JsonObject:
    """compare's compute deltas; `same_work` false: the FLOPs per image differ."""
    return {
        "flops_per_image": _delta(deltas.flops_per_image),
        "achieved_tflops": _delta(deltas.achieved_tflops),
        "mfu": _share_delta(deltas.mfu),
        "energy_j_per_img": _delta(deltas.energy_j_per_img),
        "same_work": deltas.same_work,
    }


def _tensor_deltas(deltas: TensorDeltas | None) -> JsonObject | None:
    """compare's tensor peak and categories (MB); null when neither side tracked a step."""
    if deltas is None:
        return None
    return {
        "peak_mb": _delta(deltas.peak_mb),
        "categories": {name: _delta(delta) for name, delta in deltas.categories},
    }


def _gate(gate: Gate | None) -> JsonObject | None:
    if gate is None:
        return None
    return {
        "metric": gate.metric,
        "threshold_pct": gate.threshold_pct,
        "change_pct": round(gate.change_pct, 2),
        "significant": gate.significant,
        "failed": gate.failed,
    }


@_view(ResultKind.COMPARE)
def _(result: Comparison, source: ReadFrom) -> Any:
    tested = result.tested
    before, after = source if isinstance(source, tuple) else (None, None)
    return {
        "before": before,
        "after": after,
        "img_per_s": _tested(result.img_per_s, result.significance),
        "ms_per_image": _delta(result.ms_per_image),
        "gpu_util": _share_delta(result.gpu_util),
        "host_overhead_ms_per_step": _delta(result.host_overhead_ms),
        "launches_per_step": _delta(result.launches_per_step),
        "bound": _delta(result.bound),
        "latency_p50_ms": _tested(result.latency_p50_ms, tested.get("latency_p50_ms")),
        "latency_p99_ms": _tested(result.latency_p99_ms, tested.get("latency_p99_ms")),
        "step_ms": _tested(result.step_ms, tested["step_ms"]),
        "gate": _gate(result.gate),
        "cpu_wait_frac": _share_delta(result.cpu_wait_frac),
        "contended": _delta(result.contended),
        "compute": _compute_deltas(result.compute),
        "tensor_memory": _tensor_deltas(result.tensors),
        "warnings": list(result.warnings),
        "changes": diff_json(result.diff) if result.diff else None,
        "trainer_gap": trainer_gap_json(result.trainer_gap) if result.trainer_gap else None,
        "scaling": _scaling(result.scaling),
    }


def _scaling(scaling: Scaling | None) -> JsonObject | None:
    if scaling is None:
        return None
    return {
        "ranks": list(scaling.ranks),
        "global_batch": list(scaling.global_batch),
        "img_per_s": list(scaling.img_per_s),
        "speedup": round(scaling.speedup, 3),
        "efficiency": round(scaling.efficiency, 3),
    }


@_view(ResultKind.SWEEP_COMPARE)
def _(result: SweepComparison, source: ReadFrom) -> Any:
    before, after = source if isinstance(source, tuple) else (None, None)
    points = [
        {"point": p.point, **p.axes, "not_compared": p.not_compared}
        | (
            {"img_per_s": None, "gate": None}
            if p.comparison is None
            else {
                "img_per_s": _tested(p.comparison.img_per_s, p.comparison.significance),
                "gate": _gate(p.comparison.gate),
            }
        )
        for p in result.points
    ]
    gate = None
    if result.threshold_pct is not None:
        gate = {
            "threshold_pct": result.threshold_pct,
            "num_failed": len(result.failed_gates),
            "num_compared": result.num_compared,
            "num_not_compared": len(result.uncompared),
            "failed": result.gate_failed,
        }
    return {
        "before": before,
        "after": after,
        "points": points,
        "gate": gate,
        "swept": list(result.swept),
    }


@_view(ResultKind.WHAT_IF)
def _(result: Projection, source: ReadFrom) -> Any:
    return {
        "trace": source,
        "bound": result.bound,
        "regime": result.regime,
        "mechanism": result.mechanism,
        "removed": {"gpu_ms": result.removed_gpu_ms, "launches": result.removed_launches},
        "step_ms": {"now": result.step_ms, "projected": result.projected_step_ms},
        "img_per_s": {"now": result.img_per_s, "projected": result.projected_img_per_s},
        "assumptions": list(result.assumptions),
        "caveat": result.caveat,
        "checked": result.checked,
    }


@_view(ResultKind.SUMMARY)
def _(result: Summary, source: ReadFrom) -> Any:
    m = result.metrics
    # object, not JsonValue: the typed maps below (metrics, evidence) are JSON, but a dict's
    # value type is invariant, so they would not fit JsonValue without copying each one.
    out: dict[str, object] = {
        "trace": source,
        "mode": result.mode.noun,
        "model": result.model,
        "family": result.family,
        "config": result.config,
        "bound": result.verdict.bound,
        "bound_why": result.verdict.why,
        "step_ms": m.get("step_ms"),
        "img_per_s": m.get("img_per_s"),
    }
    if result.latency is not None:
        lat = result.latency
        out["latency"] = {
            "p50_ms": lat.p50_ms,
            "p90_ms": lat.p90_ms,
            "p99_ms": lat.p99_ms,
            "mean_ms": lat.mean_ms,
            "n": lat.num_samples,
            "weak": list(lat.weak),
            "histogram": [
                {"lo_ms": round(b.lo_ms, 4), "hi_ms": round(b.hi_ms, 4), "count": b.count}
                for b in lat.histogram
            ],
        }
        out["stages_ms"] = result.stages_ms
    rest: dict[str, object] = {
        "gpu_util": m.get("gpu_util"),
        "gpu_busy_ms_per_step": m.get("gpu_busy_ms"),
        "mean_kernel_us": m.get("mean_kernel_us"),
        "kernels_per_step": m.get("kernels_per_step"),
        "unique_kernels": m.get("unique_kernels"),
        "memcpy_ms_per_step": m.get("memcpy_ms"),
        "tensorcore_pct": m.get("tensorcore_pct"),
        "peak_vram_mb": m.get("peak_vram_mb"),
        "peak_rss_mb": m.get("peak_rss_mb"),
        "library_rss_mb": m.get("library_rss_mb"),
        "baseline_rss_mb": m.get("baseline_rss_mb"),
        "dataload_ms": m.get("dataload_ms"),
        "dataload_frac": m.get("dataload_frac"),
        "host_overhead_ms_per_step": m.get("host_overhead_ms"),
        "launches_per_step": m.get("launches_per_step"),
        "memory_pressure": m.get("memory_pressure"),
        "cuda_mallocs_per_step": m.get("cuda_mallocs_per_step"),
        "categories": [
            {"name": c.name, "pct": round(c.share * 100, 1), "ms_per_step": round(c.ms_per_step, 3)}
            for c in result.categories
        ],
        "top_kernels": [kernel_row(row) for row in result.top_kernels],
        "op_categories": [
            {"name": c.name, "pct": round(c.share * 100, 1), "ms_per_step": round(c.ms_per_step, 3)}
            for c in result.op_categories
        ],
        "top_ops": [
            {
                "name": row.name,
                "pct": round(row.share * 100, 1),
                "self_ms_per_step": row.self_ms_per_step,
                "num_per_step": row.num_per_step,
            }
            for row in result.top_ops
        ],
        "verdict": {
            "bound": result.verdict.bound,
            "why": result.verdict.why,
            "evidence": result.verdict.evidence,
            "levers": result.verdict.levers,
            "quiet_bound": result.verdict.quiet_bound,
            "quiet_why": result.verdict.quiet_why,
        },
        "contention": {
            "contended": m.get("contended"),
            "cpu_wait_frac": m.get("cpu_wait_frac"),
            "cpu_wait_ms_per_step": m.get("cpu_wait_ms_per_step"),
            "steal_frac": m.get("steal_frac"),
            "unknown": result.contention_unknown,
            "hardest_steps": [step_wait(row) for row in result.hardest_steps],
        },
        "has_gpu": result.has_gpu,
        "num_trials": result.num_trials,
        "isolated_trials": result.isolated_trials,
        "trace_health": None if result.trace_health is None else to_plain(result.trace_health),
        "notes": list(result.notes),
        "trace_notes": list(result.trace_notes),
        "run": _run_header(result.run),
        "trials": [
            {"index": t.index, "pid": t.pid, "bound": t.bound, **t.metrics} for t in result.trials
        ],
        "trial_spread": {
            t.metric: {"mean": t.mean, "sd": t.sd, "n": t.n} for t in result.trial_spread
        },
        "memory": None if result.memory is None else _memory(result.memory),
        "tensor_memory": None if result.tensors is None else _tensor_memory(result.tensors),
        "compute": compute_json(result.compute),
        "execution": None if result.execution is None else to_plain(result.execution),
        "world": _world(result),
    }
    out |= rest
    return out


def _world(result: Summary) -> JsonObject | None:
    """A multi-process run's world: its record and its figures (`analysis/world.py`); null
    for one process."""
    if result.world is None:
        return None
    from libreyolo.analysis.world import KEYS, exposed_ms, own_phase_ms

    record = to_plain(result.world)
    assert isinstance(record, dict)
    ranks: list[JsonValue] = []
    for rank in result.world.ranks:
        plain = to_plain(rank)
        assert isinstance(plain, dict)
        exposed = exposed_ms(rank)
        own: JsonObject = {phase: round(ms, 3) for phase, ms in own_phase_ms(rank).items()}
        plain["exposed_ms"] = None if exposed is None else round(exposed, 3)
        plain["own_phase_ms"] = own  # each phase less the collective wait inside it
        ranks.append(plain)
    record["ranks"] = ranks
    return record | {key: result.metrics.get(key) for key in KEYS}


def _run_header(run: RunHeader) -> JsonObject:
    return {
        "mode": run.mode.noun,
        "model": run.model,
        "weights": run.weights,
        "random_init": run.random_init,
        "device": run.device,
        "device_name": run.device_name,
        "batch": run.batch,
        "imgsz": run.imgsz,
        "amp": run.amp,
        "window": {
            "num_warmup": run.num_warmup,
            "num_measured": run.num_measured,
            "num_unsynced": run.num_unsynced,
            "num_synced": run.num_synced,
            "num_bare": run.num_bare,
        },
        "tool_version": run.tool_version,
        "created": run.created,
        "trace": run.trace,
        "trainer": run.trainer,
        "train_command": run.train_command,
    }


def _memory(mem: MemoryView) -> JsonObject:
    return {
        "peak_allocated_mb": mem.peak_allocated_mb,
        "peak_reserved_mb": mem.peak_reserved_mb,
        "num_alloc_retries": mem.num_alloc_retries,
        "cuda_mallocs_per_step": mem.cuda_mallocs_per_step,
        "thrash": mem.thrash,
    }


@_view(ResultKind.SWEEP)
def _(result: SweepView, source: ReadFrom) -> Any:
    # the sweep.json object as the sweep writes it: every object's keys sorted; a batch
    # search's tune.json, as its file holds it, under `tune`
    plain = to_plain(result.record, sort_keys=True)
    assert isinstance(plain, dict)
    if result.tune is not None:
        plain["tune"] = to_plain(result.tune, sort_keys=True)
    return plain


@_view(ResultKind.OUTCOME)
def _(result: MeasurementOutcome, source: ReadFrom) -> Any:
    m = result.metrics
    head: JsonObject = {"profile": result.profile_path}
    trials = {
        "img_per_s": m.get("img_per_s"),
        "img_per_s_std": result.img_per_s_std,
        "img_per_s_n": result.num_trials,
    }
    if result.mode == Mode.INFER:
        stages = {
            PREPROCESS: m.get("preprocess_ms"),
            FORWARD: m.get("forward_ms"),
            POSTPROCESS: m.get("nms_ms"),
        }
        return (
            head
            | {"mode": result.mode.noun}
            | trials
            | {
                "latency_p50_ms": m.get("latency_p50_ms"),
                "latency_p90_ms": m.get("latency_p90_ms"),
                "latency_p99_ms": m.get("latency_p99_ms"),
                "bound": result.bound,
                "stages_ms": stages,
                "bound_why": result.why,
                "contended": m.get("contended"),
                "quiet_bound": result.quiet_bound,
                "notes": list(result.notes),
                "trace_notes": list(result.trace_notes),
            }
        )
    return (
        head
        | {"trace": result.trace_path}
        | trials
        | {
            "bound": result.bound,
            "gpu_util": m.get("gpu_util"),
            "mode": result.mode.noun,
            "step_ms": m.get("step_ms"),
            "bound_why": result.why,
            "contended": m.get("contended"),
            "quiet_bound": result.quiet_bound,
            "notes": list(result.notes),
            "trace_notes": list(result.trace_notes),
        }
    )


@_view(ResultKind.REPORT)
def _(result: ReportWritten, source: ReadFrom) -> Any:
    return {
        "report": result.path,
        "page": result.page,
        "bytes": result.num_bytes,
        "inputs": list(result.inputs),
        "num_points": result.num_points,
    }


@_view(ResultKind.LOGGED)
def _(result: LoggedRuns, source: ReadFrom) -> Any:
    mlflow = None
    if result.mlflow_uri is not None:
        mlflow = {
            "tracking_uri": result.mlflow_uri,
            "experiment": result.experiment,
            "experiment_id": result.experiment_id,
            "parent_run_id": result.parent_run_id,
        }
    return {
        "source": result.source,
        "mlflow": mlflow,
        "tensorboard": result.tensorboard_dir,
        "runs": [
            {
                "name": run.name,
                "status": run.status,
                "reason": run.reason,
                "mlflow_run_id": run.mlflow_run_id,
                "tensorboard_dir": run.tensorboard_dir,
            }
            for run in result.runs
        ],
    }


@_view(ResultKind.CONFIG)
def _(result: ConfigView, source: ReadFrom) -> Any:
    return result.config


@_view(ResultKind.METRIC)
def _(result: MetricValue, source: ReadFrom) -> Any:
    return {result.name: result.value}


@_view(ResultKind.METRIC_LIST)
def _(result: MetricList, source: ReadFrom) -> Any:
    return list(result.names)


@_view(ResultKind.SUBCOMMANDS)
def _(result: SubcommandList, source: ReadFrom) -> Any:
    return {"subcommands": [{"name": n, "help": h} for n, h in result.entries]}
