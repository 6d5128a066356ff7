"""The flat metric catalogue that `get` reads, with libreyolo 1.6.0's names, meanings and units.

Computed once when a profile is built (and stored in the document); migrated v1 files keep the
values v1 stored. Pure: no I/O, imports no torch or numpy.

Step time comes from the collector's unsynced samples when the profile has them (honest overlap;
for training, the bare ones that ran without the profiler, when there are any); otherwise from
the trace's device-side step spans (the CPU may run ahead of the GPU). Every GPU
number (util, busy, memcpy, the host residual) is taken over that same device-side window (from
the CPU step's start to the end of the last GPU work it launched; busy is the union of kernel,
memcpy and memset intervals in it, never their sum, so concurrent streams cannot pass 100 %),
so a bare trace's step, busy and util agree: util = busy / step.
"""

from __future__ import annotations

from libreyolo.analysis import stats
from libreyolo.analysis.contention import host_metrics
from libreyolo.analysis.device_memory import window_memory
from libreyolo.analysis.efficiency import efficiency_metrics
from libreyolo.analysis.execution import execution_metrics
from libreyolo.analysis.fragmentation import fragmentation_pct
from libreyolo.analysis.tensor_memory import tensor_memory_metrics
from libreyolo.document.mode import Mode
from libreyolo.document.model import HostMemory, Memory, Profile, Scalar, TraceAnalysis
from libreyolo.document.phases import DATALOAD, FORWARD, INFER_STAGES, POSTPROCESS, PREPROCESS

MALLOCS_PER_STEP_THRASH = 5  # libreyolo 1.6.0's rule: ≥ 5 cudaMalloc/cudaFree per step is thrash
# Present in every profile (null when not measured), as in libreyolo 1.6.0's `get` listing.
ALWAYS = (
    "img_per_s",
    "step_ms",
    "dataload_ms",
    "dataload_frac",
    "gpu_util",
    "gpu_busy_ms",
    "mean_kernel_us",
    "kernels_per_step",
    "unique_kernels",
    "ops_per_step",
    "memcpy_ms",
    "tensorcore_pct",
    "peak_vram_mb",
    "peak_rss_mb",
    "host_overhead_ms",
    "launches_per_step",
    "cuda_mallocs_per_step",
    "memory_pressure",
    "cpu_wait_frac",
    "steal_frac",
    "cpu_wait_ms_per_step",
    "contended",
    "bound",
)


def per_step_divisor(trace: TraceAnalysis | None) -> int:
    """Steps the trace totals are divided by: the analysed ProfilerSteps, 1 for a whole window."""
    return max(trace.num_steps, 1) if trace is not None else 1


def count(value: float) -> float | int:
    """A per-step count: an int when whole, else one decimal (totals need not divide evenly)."""
    rounded = round(value, 1)
    return int(rounded) if rounded == int(rounded) else rounded


def _r(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def trace_step_ms(trace: TraceAnalysis) -> float:
    """Device-side step time: the device-side window over the step count (the whole window
    without steps). Per-step spans cannot be averaged: when the CPU runs ahead they overlap.
    """
    return (trace.device_window_ms or trace.window_ms) / per_step_divisor(trace)


def unsynced_walls(profile: Profile) -> list[float]:
    """The unsynced wall time per measured iteration (inference latency or training step)."""
    return profile.samples.latency_ms or [s.wall_ms for s in profile.samples.steps if not s.synced]


def profiler_overhead_pct(profile: Profile) -> float | None:
    """What the profiler added to the headline step time in this run, in percent: traced
    unsynced iterations against bare ones right after them (medians); 0.0 when nothing was
    traced; None when the file has no calibration."""
    if profile.window.profiler_on is False:
        return 0.0
    traced, bare = stats.median(unsynced_walls(profile)), stats.median(profile.samples.bare_ms)
    if traced is None or not bare:
        return None
    return round((traced / bare - 1) * 100, 1)


def step_timing(profile: Profile) -> tuple[float | None, float | None]:
    """(step_ms, dataload_ms) from unsynced samples, else from the trace. A training step's
    time is that of the bare steps when the window has them: the same unsynced steps right
    after the traced ones, without the profiler's cost per op (a tenth of a small CPU step:
    the trace is for attribution, the throughput is the trainer's own); dataload_ms stays the
    traced steps' (only they time their `next()`)."""
    if profile.samples.latency_ms:
        return stats.mean(profile.samples.latency_ms), 0.0
    unsynced = [s for s in profile.samples.steps if not s.synced]
    if unsynced:
        loads = [s.dataload_ms for s in unsynced if s.dataload_ms is not None]
        walls = [s.wall_ms for s in unsynced]
        if untraced_timing(profile):
            walls = profile.samples.bare_ms
        return stats.mean(walls), stats.mean(loads)
    if profile.trace is None:
        return None, None
    n = per_step_divisor(profile.trace)
    dataload = next((p.cpu_ms for p in profile.trace.phases if p.name == DATALOAD), None)
    return trace_step_ms(profile.trace), None if dataload is None else dataload / n


def untraced_timing(profile: Profile) -> bool:
    """Whether a training profile's step time comes from its bare (untraced) steps."""
    return (
        profile.kind is Mode.TRAIN
        and profile.window.profiler_on is True
        and bool(profile.samples.bare_ms)
    )


def device_busy(trace: TraceAnalysis) -> tuple[float, float]:
    """(GPU busy ms, window ms) over the device-side window: first step start to the end of the
    last GPU work the steps launched. The CPU-side window would cut off the work a lagging GPU
    still runs (the V100 fixture: 76.8 of 94.5 busy ms per step) while the step time is measured
    on the device side. Files without a device-side window fall back to the CPU-side one."""
    if trace.device_window_ms > 0:
        return trace.device_busy_ms, trace.device_window_ms
    return trace.gpu_busy_ms, trace.window_ms


def _util(busy_ms: float, window_ms: float) -> float:
    """Busy over window, as a fraction; a union of intervals clipped to the window cannot
    exceed it, so the clip only guards rounding and degenerate zero-length windows."""
    return round(min(busy_ms / window_ms, 1.0), 3) if window_ms > 0 else 0.0


def _memory_metrics(memory: Memory | None, trace: TraceAnalysis | None) -> dict[str, Scalar]:
    """Peak VRAM and memory pressure, from the allocator's record with or without a trace."""
    if memory is None:
        return {}
    peak, reserved = memory.peak_allocated_bytes, memory.peak_reserved_bytes
    mallocs = memory.num_mallocs / per_step_divisor(trace)
    inactive, free = memory.peak_inactive_split_bytes, memory.largest_free_block_bytes
    return {
        "peak_vram_mb": None if peak is None else round(peak / 1e6, 1),
        "peak_vram_reserved_mb": None if reserved is None else round(reserved / 1e6, 1),
        "vram_fragmentation_pct": fragmentation_pct(inactive, reserved),
        "largest_free_block_mb": None if free is None else round(free / 1e6, 1),
        "cuda_mallocs_per_step": count(mallocs) if trace is not None else None,
        "memory_pressure": memory.thrash or mallocs >= MALLOCS_PER_STEP_THRASH,
    }


def _host_memory_metrics(memory: HostMemory | None) -> dict[str, Scalar]:
    """The measuring process's own peak RSS over the window, the shared library pages left
    out of it and its own RSS before the model was built, in MB (10**6 bytes, as peak VRAM)."""
    memory = memory or HostMemory()
    return {
        name: None if value is None else round(value / 1e6, 1)
        for name, value in (
            ("peak_rss_mb", memory.peak_rss_bytes),
            ("library_rss_mb", memory.library_rss_bytes),
            ("baseline_rss_mb", memory.baseline_rss_bytes),
        )
    }


def _gpu_metrics(trace: TraceAnalysis) -> dict[str, Scalar]:
    n = per_step_divisor(trace)
    busy_ms, window_ms = device_busy(trace)
    return {
        "gpu_util": _util(busy_ms, window_ms),
        "gpu_busy_ms": round(busy_ms / n, 2),
        "mean_kernel_us": round(trace.kernel_sum_ms * 1000 / trace.num_kernels, 2)
        if trace.num_kernels
        else 0.0,
        "kernels_per_step": count(trace.num_kernels / n),
        "unique_kernels": len(trace.kernels),
        "ops_per_step": count(sum(op.num_calls for op in trace.ops) / n),
        "memcpy_ms": round(trace.memcpy_ms / n, 3),
        "tensorcore_pct": round(100 * trace.tensor_core_ms / trace.kernel_sum_ms, 1)
        if trace.kernel_sum_ms > 0
        else 0.0,
        "launches_per_step": count(trace.launches.num_launches / n),
        "host_us_per_launch": _r(trace.launches.host_us_per_launch, 2),
        "num_steps": trace.num_steps,
    } | _comm_metrics(trace)


COMM_KEYS = ("comm_ms", "comm_exposed_pct")


def _comm_metrics(trace: TraceAnalysis) -> dict[str, Scalar]:
    """Collective time per step and the share of it nothing computed beside (exposed: the
    step waits for it): the busiest device's collective kernels, or on the CPU gloo's
    collectives against the step thread's ops; both null where no collective was recorded
    (one process on the CPU), the exposed share null where no collective kernel ran."""
    if trace.devices and trace.devices[0].comm_busy_ms is not None and trace.has_gpu:
        device = max(trace.devices, key=lambda d: d.busy_ms)
        comm, overlap = device.comm_busy_ms or 0.0, device.comm_overlap_ms or 0.0
    elif trace.host_comm_ms is not None:
        comm, overlap = trace.host_comm_ms, trace.host_comm_overlap_ms or 0.0
    else:
        return dict.fromkeys(COMM_KEYS)
    return {
        "comm_ms": round(comm / per_step_divisor(trace), 3),
        "comm_exposed_pct": round(100 * (comm - overlap) / comm, 1) if comm > 0 else None,
    }


def _phase_metrics(trace: TraceAnalysis) -> dict[str, Scalar]:
    n = per_step_divisor(trace)
    out: dict[str, Scalar] = {}
    for phase in trace.phases:
        wall = phase.wall_ms_per_step
        if wall is None and phase.cpu_ms is not None:
            wall = phase.cpu_ms / n
        out[f"{phase.name}_gpu_ms"] = round(phase.gpu_ms / n, 3)
        out[f"{phase.name}_wall_ms"] = _r(wall, 2)
        out[f"{phase.name}_kernels"] = count(phase.num_kernels / n)
        out[f"{phase.name}_ops"] = count(phase.num_ops / n)
    return out


def _inference_metrics(profile: Profile, img_per_s: float | None) -> dict[str, Scalar]:
    latency = profile.samples.latency_ms
    stage = {name: stats.median(profile.samples.stage_ms.get(name, [])) for name in INFER_STAGES}
    return {
        "latency_p50_ms": _r(stats.percentile(latency, 50), 3),
        "latency_p90_ms": _r(stats.percentile(latency, 90), 3),
        "latency_p99_ms": _r(stats.percentile(latency, 99), 3),
        "latency_mean_ms": _r(stats.mean(latency), 3),
        "latency_n": len(latency),
        "throughput_img_s": img_per_s,
        "preprocess_ms": _r(stage[PREPROCESS], 3),
        "forward_ms": _r(stage[FORWARD], 3),
        "nms_ms": _r(stage[POSTPROCESS], 3),
    }


def compute_metrics(profile: Profile, *, bound: str) -> dict[str, Scalar]:
    """The full metric map of a v2 profile whose verdict label is `bound`."""
    step_ms, dataload_ms = step_timing(profile)
    batch = profile.run.batch
    img_per_s = round(batch * 1000 / step_ms, 2) if batch and step_ms else None
    metrics: dict[str, Scalar] = dict.fromkeys(ALWAYS)
    metrics |= {
        "img_per_s": img_per_s,
        "step_ms": _r(step_ms, 2),
        "dataload_ms": _r(dataload_ms, 2),
        "dataload_frac": round(dataload_ms / step_ms, 3)
        if dataload_ms is not None and step_ms
        else None,
        "bound": bound,
    }
    trace = profile.trace
    if trace is not None:
        metrics |= _gpu_metrics(trace)
        busy = device_busy(trace)[0] / per_step_divisor(trace)  # the busy `summary` prints
        host = step_ms - busy - (dataload_ms or 0.0) if step_ms is not None else None
        metrics["host_overhead_ms"] = (
            _r(max(host, 0.0), 2) if trace.has_gpu and host is not None else None
        )
        metrics |= _phase_metrics(trace)
    metrics |= _memory_metrics(window_memory(profile), trace)
    metrics |= _host_memory_metrics(profile.host_memory)
    metrics |= tensor_memory_metrics(profile)
    if profile.kind == Mode.INFER:
        metrics |= _inference_metrics(profile, img_per_s)
    metrics |= efficiency_metrics(profile.compute, img_per_s)
    metrics |= execution_metrics(profile.execution)
    metrics["profiler_overhead_pct"] = profiler_overhead_pct(profile)
    metrics |= host_metrics(profile)
    return metrics
