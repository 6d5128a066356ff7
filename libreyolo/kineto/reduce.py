"""Chrome trace -> `TraceAnalysis`: the one reduction from event columns to the document.

Role: link every GPU activity to the runtime/driver call that launched it (correlation id), and
from that link derive what is in the window, which step and which phase it belongs to; then
measure busy time (interval unions, fed in start order and never kept), count launches and
allocator calls, and build the kernel, category, op and phase tables. Spooled calls and ops are
read back in passes over their blocks; what is held stays a few typed arrays a GPU activity long.
Must not: read files (events.py does), print, or import torch/numpy.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from heapq import merge
from itertools import compress, islice

from libreyolo.document.health_names import BEFORE_LAUNCH_US
from libreyolo.document.limits import MAX_INPUT_BYTES
from libreyolo.document.model import (
    Device,
    LaunchStat,
    Memory,
    TraceAnalysis,
)
from libreyolo.errors import AnalysisError
from libreyolo.kineto import classify
from libreyolo.kineto.attribution import (
    OpTotals,
    PhaseMap,
    aggregate_ops,
    build_phase_map,
    is_engine_op,
    nesting_order,
    shapes_ranges,
)
from libreyolo.kineto.columns import Columns
from libreyolo.kineto.events import KERNEL, TraceEvents, read_trace
from libreyolo.kineto.health import HealthFacts, trace_health
from libreyolo.kineto.host_comm import host_comm
from libreyolo.kineto.intervals import US_DECIMALS, Coverage, sorted_runs, start_order, to_ms
from libreyolo.kineto.launch_ops import NO_OP, launching_ops
from libreyolo.kineto.op_stream import Disordered, Queries, sweep_ops
from libreyolo.kineto.steps import (
    STEP_PREFIX,
    StepCounts,
    StepRange,
    StepWindow,
    find_steps,
    measured_window,
    step_spans,
    trace_steps,
)
from libreyolo.kineto.tables import (
    category_table,
    kernel_stats,
    kernel_table,
    op_table,
    phase_table,
)

# libreyolo 1.6.0's threshold, kept: 5 or more cudaMalloc/cudaFree per step means the caching
# allocator keeps missing, and each such call synchronises the device.
THRASH_MALLOCS_PER_STEP = 5


def analyse_trace(
    path: str | os.PathLike[str],
    *,
    workers: int | None = None,
    max_input_bytes: int = MAX_INPUT_BYTES,
) -> TraceAnalysis:
    """Analyse one Chrome trace (`.json` or `.json.gz`) written by torch.profiler.

    `workers`: decoding processes for large traces (None: `workers.default_workers()`; 1: none);
    `max_input_bytes`: the most it reads, decompressed.

    Raises:
        MissingFileError: the path does not exist or is not a regular file.
        AnalysisError: the file is empty, not JSON, truncated, not a Chrome trace, holds no
            complete ("X") CPU op, annotation, CUDA call or GPU activity, or its ops cannot be
            spooled to a temporary file.
    """
    try:
        events = read_trace(
            path,
            workers=workers,
            max_input_bytes=max_input_bytes,
            spool_ops=(shapes_ranges, is_engine_op),
        )
        try:
            if not events:  # no complete event of a kind the analysis reads
                raise _no_events(path)
            return reduce_trace(events)
        finally:
            events.close()
    except OSError as exc:  # reading errors are AnalysisErrors already: this is the spool's
        raise AnalysisError(
            f"failed to analyse {os.fspath(path)}: cannot spool its ops to a temporary file "
            f"({exc.strerror or exc})",
            hint="point TMPDIR at a directory with free space",
        ) from exc


def _no_events(path: str | os.PathLike[str]) -> AnalysisError:
    return AnalysisError(
        f"failed to analyse {os.fspath(path)}: the trace holds no events",
        hint="profile at least one step with torch.profiler before exporting the trace",
    )


@dataclass(slots=True)
class _Link:
    """Per GPU activity: launching call (-1: none found), in-window flag and phase id."""

    launcher: array[int]
    in_window: bytes  # 1: in the window
    phase: array[int]


def reduce_trace(events: TraceEvents) -> TraceAnalysis:
    """Reduce decoded trace columns to the document's `TraceAnalysis`."""
    notes: list[str] = []
    launcher, launching, gpu_ids = _launchers(events)
    calls_ts = launching.ts
    times = array(
        "d", (calls_ts[k] if k >= 0 else t for k, t in zip(launcher, events.gpu.ts, strict=True))
    )
    window = measured_window(events, _drop_idle_tail(find_steps(events), times, notes))
    phase_map = build_phase_map(events)
    counts = StepCounts.empty(window)
    launches, mallocs, silent = _calls(events, window, counts, gpu_ids)
    # From here on `calls` are the launching calls only, indexed as `launcher` indexes them.
    events = replace(events, calls=launching, call_spool=None)
    link = _link(events, window, launcher, times, phase_map, counts)
    spans = step_spans(window, counts)
    device_end = _device_end(window, spans, has_gpu=len(events.gpu) > 0)
    devices, meters = _devices(events, window, spans, device_end)
    primary = max(devices, key=lambda device: device.busy_ms) if devices else None
    major = _major(events, primary)
    launched_by, op_totals = _sweep_ops(events, launcher, window, phase_map)
    kernels = kernel_table(events, link.in_window, link.phase, phase_map, major, launched_by)
    ops = op_table(events.names, phase_map, op_totals)
    busy, copies = meters[primary.id] if primary else (None, None)
    steps = trace_steps(window, counts, busy)
    notes += _notes(window, launcher)
    facts = _health_facts(events, window, launcher, times, launches.num_launches, silent)
    collectives = host_comm(events, window)
    return TraceAnalysis(
        source=window.source,
        time_unit=events.time_unit,
        num_steps=len(window.steps),
        window_ms=to_ms(window.end - window.start),
        has_gpu=len(events.gpu) > 0,
        steps=steps,
        devices=devices,
        gpu_busy_ms=primary.busy_ms if primary else 0.0,
        gpu_kernel_busy_ms=primary.kernel_busy_ms if primary else 0.0,
        device_window_ms=to_ms(device_end - window.start),
        device_busy_ms=to_ms(busy.covered(window.start, device_end)) if busy else 0.0,
        memcpy_ms=to_ms(copies.covered(window.start, device_end)) if copies else 0.0,
        kernel_sum_ms=to_ms(sum(row.total_us for row in kernels.values())),
        num_kernels=sum(row.calls for row in kernels.values()),
        tensor_core_ms=to_ms(sum(row.total_us for row in kernels.values() if row.tensor_core)),
        attention_ms=to_ms(sum(row.total_us for row in kernels.values() if row.attention)),
        launches=launches,
        memory=_memory(events, window, mallocs),
        phases=phase_table(kernels, ops, phase_map, window),
        categories=category_table(kernels, events, link.in_window),
        kernels=kernel_stats(kernels),
        ops=ops,
        host_comm_ms=to_ms(collectives.comm_us) if collectives else None,
        host_comm_overlap_ms=to_ms(collectives.overlap_us) if collectives else None,
        host_comm_exposed_ms={
            phase: to_ms(us) for phase, us in (collectives.exposed_us_by_phase.items())
        }
        if collectives
        else {},
        notes=notes,
        health=trace_health(facts, steps),
    )


def _health_facts(
    events: TraceEvents,
    window: StepWindow,
    launcher: array[int],
    times: array[float],
    num_launches: int,
    silent: int,
) -> HealthFacts:
    """What the health checks read, counted over the GPU records; `times` are their launch
    times (their own start where no call launched them), `silent` the window's launch calls
    no GPU record answers."""
    gpu = events.gpu
    late = window.end + (window.end - window.start)
    kernels = bytes(kind == KERNEL for kind in gpu.kind)  # a byte a record: traces run to GBs
    return HealthFacts(
        num_gpu=len(gpu),
        num_kernels=kernels.count(1),
        num_launches=num_launches,
        launches_without_activity=silent,
        activity_without_launch=launcher.count(-1),
        starts_before_launch=sum(
            1
            for start, launched, call in zip(gpu.ts, times, launcher, strict=True)
            if call >= 0 and start < launched - BEFORE_LAUNCH_US
        ),
        outside_window=sum(1 for start in gpu.ts if start > late),
        zero_timestamps=sum(1 for start in gpu.ts if start == 0),
        zero_duration_kernels=sum(1 for dur in compress(gpu.dur, kernels) if dur <= 0),
    )


def _sweep_ops(
    events: TraceEvents, launcher: array[int], window: StepWindow, phase_map: PhaseMap
) -> tuple[Sequence[int], OpTotals]:
    """(per GPU activity the name id of the op that launched it, NO_OP: none; the op totals
    over the window): one streamed sweep over the spooled ops, or sorted columns when the ops
    are in memory or out of order."""
    skip = {i for i, name in enumerate(events.names) if name.startswith(STEP_PREFIX)}
    if events.spool is not None:
        try:
            totals, found = sweep_ops(
                events.spool,
                phase_map,
                (window.start, window.end),
                skip,
                len(events.names),
                _queries(events, launcher),
                len(events.calls),
            )
        except Disordered:
            events = replace(events, ops=events.spool.load(), spool=None)
        else:
            return array("i", (found[k] if k >= 0 else NO_OP for k in launcher)), totals
    ops = events.ops
    order = nesting_order(ops.ts, ops.dur, ops.thread)  # sorted once, for both
    totals = aggregate_ops(ops, phase_map, window.start, window.end, skip, order)
    return launching_ops(events, launcher, order), totals


def _queries(events: TraceEvents, launcher: array[int]) -> dict[int, Queries]:
    """Per thread, its launching calls (starts, call indices), by start (ties in any order:
    calls that start together get the same op)."""
    calls = events.calls
    launching = bytearray(len(calls))  # a byte a call, not a set of them
    for call in launcher:
        if call >= 0:
            launching[call] = 1
    by_thread: dict[int, array[int]] = {}
    for call in compress(range(len(calls)), launching):
        by_thread.setdefault(calls.thread[call], array("i")).append(call)
    start = calls.ts.__getitem__
    queries = {}
    for thread, found in by_thread.items():
        starts = array("d", map(start, found))
        order = start_order(starts)  # calls are mostly written in order: no sort
        if not isinstance(order, range):
            found = array("i", map(found.__getitem__, order))
            starts = array("d", map(start, found))
        queries[thread] = (starts, found)
    return queries


def _notes(window: StepWindow, launcher: array[int]) -> list[str]:
    notes = [] if window.steps else ["no ProfilerStep: the whole trace is one window"]
    if unlinked := launcher.count(-1):
        notes.append(f"{unlinked} GPU activities have no launching call: unphased")
    return notes


def _launchers(events: TraceEvents) -> tuple[array[int], Columns, array[int]]:
    """(per GPU activity the index of its launching call in the second item, -1: none; the
    launching calls' ts and thread; the GPU activities' correlation ids, sorted). The
    launching call is the last call that carries the activity's correlation id; the calls are
    streamed once and joined by binary search in the sorted GPU ids, so only typed arrays a GPU
    activity long are kept, whatever the calls."""
    gpu = events.gpu.corr
    runs = sorted_runs(gpu)
    wanted = runs[0] if len(runs) == 1 else array(gpu.typecode, merge(*runs))
    size = len(wanted)
    # Per sorted id (its first copy): the call's start and thread; thread -1: no call found.
    launching = Columns(ts=array("d", [0.0]) * size, thread=array("i", [-1]) * size)
    starts, threads = launching.ts, launching.thread
    for block in events.call_blocks():
        for corr, start, thread in zip(block.corr, block.ts, block.thread, strict=True):
            at = bisect_left(wanted, corr)
            if at < size and wanted[at] == corr and corr != -1:
                starts[at] = start
                threads[at] = thread
    at_id = partial(bisect_left, wanted)
    launcher = array("i", (at if threads[at] >= 0 else -1 for at in map(at_id, gpu)))
    return launcher, launching, wanted


def _drop_idle_tail(
    steps: list[StepRange], times: array[float], notes: list[str]
) -> list[StepRange]:
    """Drop trailing steps that launched no GPU work (in a trace that has some); `times` are
    the launch times of the GPU activities."""
    if not times or not steps:
        return steps
    last = max(times)
    kept = [step for step in steps if step.start <= last]
    if not kept:  # no step launched anything: not a cut-off tail, keep them all
        return steps
    notes.extend(
        f"step {step.number} dropped: it launched no GPU work" for step in steps[len(kept) :]
    )
    return kept


def _link(
    events: TraceEvents,
    window: StepWindow,
    launcher: array[int],
    times: array[float],
    phase_map: PhaseMap,
    counts: StepCounts,
) -> _Link:
    """Place each GPU activity by its launch time: window, step and the launching call's phase."""
    in_window = bytes(window.start <= time < window.end for time in times)
    phases = array("i")
    unphased = phase_map.unphased
    threads = events.calls.thread
    spans: dict[int, tuple[int, float, float]] = {}  # thread -> last (phase, from, until)
    for call, time in zip(launcher, times, strict=True):
        if call < 0:
            phases.append(unphased)
            continue
        thread = threads[call]
        span = spans.get(thread)
        if span is None or not span[1] <= time < span[2]:
            span = spans[thread] = phase_map.phase_span(thread, time)
        phases.append(span[0])
    _count_steps(events, window, times, counts)
    return _Link(launcher, in_window, phases)


def _count_steps(
    events: TraceEvents, window: StepWindow, times: array[float], counts: StepCounts
) -> None:
    """Per step: kernels launched in it, and the end of the last GPU activity it launched."""
    gpu = events.gpu
    for i, step in enumerate(map(window.step_of, times)):
        if step >= 0:
            finish = gpu.ts[i] + gpu.dur[i]
            if finish > counts.gpu_end[step]:
                counts.gpu_end[step] = finish
            if gpu.kind[i] == KERNEL:
                counts.kernels[step] += 1


def _device_end(window: StepWindow, spans: list[tuple[float, float]], *, has_gpu: bool) -> float:
    """The end of the device-side window: the GPU may finish a step's work after the CPU left
    it, so it runs to the end of the last GPU work any step launched, as the step rows round it
    (step time, busy time and memcpy time are all measured on it: a CPU-side clip would drop
    the copies a lagging GPU still runs)."""
    return max(
        [
            window.end,
            *(
                round(start, US_DECIMALS) + (to_ms(end - start) if has_gpu else 0.0) * 1000
                for start, end in spans
            ),
        ]
    )


def _devices(
    events: TraceEvents,
    window: StepWindow,
    spans: list[tuple[float, float]],
    device_end: float,
) -> tuple[list[Device], dict[int, tuple[Coverage, Coverage]]]:
    """Per device: busy and kernel-busy time in the window; also (all-activity, copy-only)
    coverage of the step spans and the device window. One pass over the activity in start
    order, no union kept."""
    gpu = events.gpu
    busy_spans = [(window.start, window.end), (window.start, device_end), *spans]
    in_window = [(window.start, window.end)]
    meters = {
        device_id: (
            Coverage(busy_spans),
            Coverage(in_window),
            Coverage([(window.start, device_end)]),
            Coverage(in_window),  # communication kernels
            Coverage(in_window),  # every other kernel: computation
        )
        for device_id in sorted(set(gpu.device))
    }
    comm_names = {
        name_id
        for name_id in gpu.present
        if classify.classify_kernel(events.names[name_id]) == classify.COMMUNICATION
    }
    ts, dur, kind, device, names = gpu.ts, gpu.dur, gpu.kind, gpu.device, gpu.name
    for i in start_order(ts):
        start = ts[i]
        end = start + max(dur[i], 0.0)  # negative durations count as empty, as in union_of
        busy, kernels, copies, comm, comp = meters[device[i]]
        busy.add(start, end)
        if kind[i] == KERNEL:
            kernels.add(start, end)
            (comm if names[i] in comm_names else comp).add(start, end)
        else:
            copies.add(start, end)
    devices: list[Device] = []
    unions: dict[int, tuple[Coverage, Coverage]] = {}
    for device_id, (busy, kernels, copies, comm, comp) in meters.items():
        unions[device_id] = (busy.finish(), copies.finish())
        info = events.devices.get(device_id)
        kernel_us = kernels.finish().covered(window.start, window.end)
        comm_us = comm.finish().covered(window.start, window.end)
        comp_us = comp.finish().covered(window.start, window.end)
        devices.append(
            Device(
                id=device_id,
                name=info.name if info else None,
                num_sms=info.num_sms if info else None,
                busy_ms=to_ms(busy.covered(window.start, window.end)),
                kernel_busy_ms=to_ms(kernel_us),
                comm_busy_ms=to_ms(comm_us),
                # comm ∪ comp is every kernel: what the two cover beyond it, they cover together
                comm_overlap_ms=to_ms(max(comm_us + comp_us - kernel_us, 0.0)),
            )
        )
    return devices, unions


def _calls(
    events: TraceEvents, window: StepWindow, counts: StepCounts, gpu_ids: array[int]
) -> tuple[LaunchStat, int, int]:
    """Launch API calls, memcpy/memset calls and allocator calls inside the window, and how
    many of those launches no GPU record answers (`gpu_ids`: the records' sorted correlation
    ids): one pass over the calls, each name classified once."""
    names = events.names
    kinds: dict[int, tuple[str | None, bool, bool]] = {}  # name id -> (launch API, copy, alloc)
    wanted: set[int] = set()
    by_api: Counter[str] = Counter()
    durations = array("d")  # typed: a GPU trace has about one launch call per kernel
    num_copies = num_mallocs = silent = 0
    size = len(gpu_ids)
    for block in events.call_blocks():
        for nid in set(block.name).difference(kinds):
            name = names[nid]
            kind = (
                classify.launch_api(name),
                classify.is_memcpy_api(name),
                classify.is_malloc_api(name),
            )
            kinds[nid] = kind
            if any(kind):
                wanted.add(nid)
        ts, dur, name_ids, corr = block.ts, block.dur, block.name, block.corr
        for i in compress(range(len(block)), map(wanted.__contains__, name_ids)):
            start = ts[i]
            if not window.start <= start < window.end:
                continue
            api, copy, alloc = kinds[name_ids[i]]
            if api:
                by_api[api] += 1
                durations.append(dur[i])
                at = bisect_left(gpu_ids, corr[i])
                if at == size or gpu_ids[at] != corr[i]:
                    silent += 1
                step = window.step_of(start)
                if step >= 0:
                    counts.launches[step] += 1
            if copy:
                num_copies += 1
            if alloc:
                num_mallocs += 1
                step = window.step_of(start)
                if step >= 0:
                    counts.mallocs[step] += 1
    stat = LaunchStat(
        num_launches=len(durations),
        by_api=dict(sorted(by_api.items(), key=lambda item: (-item[1], item[0]))),
        num_memcpy_calls=num_copies,
        host_us_per_launch=_median(durations),
    )
    return stat, num_mallocs, silent


def _median(values: array[float]) -> float | None:
    """Median in µs, rounded (statistics.median, without importing `statistics` for it); the
    values sorted in runs and merged, never one list of them."""
    if not values:
        return None
    middle, odd = divmod(len(values), 2)
    central = list(islice(merge(*sorted_runs(values)), middle - 1 + odd, middle + 1))
    median = central[0] if odd else (central[0] + central[1]) / 2
    return round(median, US_DECIMALS)


def _memory(events: TraceEvents, window: StepWindow, num_mallocs: int) -> Memory:
    """Allocator peaks from CUDA `[memory]` samples in the window, and the malloc count."""
    samples = events.memory
    inside = [window.contains(time) for time in samples.ts]
    allocated = list(compress(samples.allocated, inside))
    reserved = [value for value in compress(samples.reserved, inside) if value >= 0]
    steps = max(len(window.steps), 1)  # without steps the whole trace is one step
    return Memory(
        peak_allocated_bytes=max(allocated) if allocated else None,
        peak_reserved_bytes=max(reserved) if reserved else None,
        num_mallocs=num_mallocs,
        thrash=num_mallocs / steps >= THRASH_MALLOCS_PER_STEP,
    )


def _major(events: TraceEvents, primary: Device | None) -> int | None:
    """Compute capability (major) of the primary GPU, when deviceProperties lists it."""
    info = events.devices.get(primary.id) if primary else None
    return info.compute_major if info else None
