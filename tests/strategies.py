"""Hypothesis strategies for random but valid `libreyolo.profile/v2` documents.

Floats are finite (JSON has no NaN or infinity) and integers fit in 53 bits, so every generated
value survives a JSON round trip exactly.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from libreyolo.document.model import (
    Artifacts,
    CallStat,
    CategoryStat,
    Device,
    Environment,
    KernelStat,
    LaunchStat,
    Memory,
    OpStat,
    PhaseStat,
    Profile,
    RunInfo,
    Samples,
    StepSample,
    Tool,
    TraceAnalysis,
    TraceStep,
    Trial,
    Verdict,
    Window,
)
from libreyolo.document.validate import metrics_problem
from libreyolo.kineto.classify import CATEGORY_NAMES

PHASES = ("dataload", "to_device", "forward", "backward", "optimizer", "preprocess", "unphased")
BOUNDS = ("compute", "host / launch", "dataloader", "memory-pressure", "nms / postprocess")
MAX_INT = 2**53

names = st.text(min_size=1, max_size=12)
ms = st.floats(min_value=0.0, max_value=1e7, allow_nan=False, allow_infinity=False)
any_float = st.floats(allow_nan=False, allow_infinity=False)
counts = st.integers(min_value=0, max_value=10**9)
small_lists = {"max_size": 4}
phase_names = st.sampled_from(PHASES)

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-MAX_INT, MAX_INT), any_float, st.text(max_size=8)
)
json_values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)
scalar_maps = st.dictionaries(names, scalars, max_size=6)
# Metric maps the reader accepts: no negative or non-numeric time, count or rate (validate.py).
metric_maps = scalar_maps.filter(lambda metrics: metrics_problem(metrics) is None)
optional_ms = st.none() | ms
optional_text = st.none() | st.text(max_size=16)


def call_stats(*, ops: bool) -> st.SearchStrategy[CallStat]:
    """One phase's time and count; `self_ms` only for ops."""
    return st.builds(
        CallStat,
        total_ms=ms,
        num_calls=counts,
        self_ms=optional_ms if ops else st.none(),
    )


def phase_calls(*, ops: bool) -> st.SearchStrategy[dict[str, CallStat]]:
    return st.dictionaries(phase_names, call_stats(ops=ops), max_size=3)


kernel_stats = st.builds(
    KernelStat,
    name=names,
    category=st.sampled_from(CATEGORY_NAMES),
    tensor_core=st.booleans(),
    total_ms=ms,
    num_calls=counts,
    phases=phase_calls(ops=False),
)
op_stats = st.builds(
    OpStat,
    name=names,
    self_ms=optional_ms,
    total_ms=ms,
    num_calls=counts,
    phases=phase_calls(ops=True),
)
phase_stats = st.builds(
    PhaseStat,
    name=phase_names,
    gpu_ms=ms,
    cpu_ms=optional_ms,
    wall_ms_per_step=optional_ms,
    num_kernels=counts,
    num_ops=counts,
    num_unique_kernels=counts,
)
trace_steps = st.builds(
    TraceStep,
    index=counts,
    start_us=ms,
    cpu_ms=ms,
    gpu_span_ms=optional_ms,
    gpu_busy_ms=ms,
    num_kernels=counts,
    num_launches=counts,
    num_mallocs=counts,
)
devices = st.builds(
    Device,
    id=st.integers(0, 7),
    name=optional_text,
    num_sms=st.none() | st.integers(1, 256),
    busy_ms=ms,
    kernel_busy_ms=ms,
)
launch_stats = st.builds(
    LaunchStat,
    num_launches=counts,
    by_api=st.dictionaries(names, counts, max_size=3),
    num_memcpy_calls=counts,
    host_us_per_launch=optional_ms,
)
memories = st.builds(
    Memory,
    peak_allocated_bytes=st.none() | st.integers(0, MAX_INT),
    peak_reserved_bytes=st.none() | st.integers(0, MAX_INT),
    num_alloc_retries=st.none() | counts,
    num_mallocs=counts,
    thrash=st.booleans(),
)
category_stats = st.builds(
    CategoryStat, name=st.sampled_from(CATEGORY_NAMES), total_ms=ms, num_kernels=counts
)


@st.composite
def trace_analyses(draw: st.DrawFn) -> TraceAnalysis:
    """A trace analysis with steps, devices, phases, categories, kernels and ops."""
    return TraceAnalysis(
        source=draw(st.sampled_from(["profiler_steps", "whole_trace"])),
        time_unit=draw(st.sampled_from(["us", "ns"])),
        num_steps=draw(st.integers(0, 64)),
        window_ms=draw(ms),
        has_gpu=draw(st.booleans()),
        steps=draw(st.lists(trace_steps, **small_lists)),
        devices=draw(st.lists(devices, max_size=2)),
        gpu_busy_ms=draw(ms),
        gpu_kernel_busy_ms=draw(ms),
        memcpy_ms=draw(ms),
        kernel_sum_ms=draw(ms),
        num_kernels=draw(counts),
        tensor_core_ms=draw(ms),
        attention_ms=draw(ms),
        launches=draw(launch_stats),
        memory=draw(memories),
        phases=draw(st.lists(phase_stats, **small_lists)),
        categories=draw(st.lists(category_stats, **small_lists)),
        kernels=draw(st.lists(kernel_stats, **small_lists)),
        ops=draw(st.lists(op_stats, **small_lists)),
        notes=draw(st.lists(st.text(max_size=20), max_size=2)),
    )


step_samples = st.builds(
    StepSample,
    index=counts,
    synced=st.booleans(),
    wall_ms=ms,
    dataload_ms=optional_ms,
    phase_ms=st.dictionaries(phase_names, ms, max_size=3),
)
samples = st.builds(
    Samples,
    steps=st.lists(step_samples, max_size=6),
    latency_ms=st.lists(ms, max_size=6),
    stage_ms=st.dictionaries(
        st.sampled_from(["preprocess", "forward", "postprocess"]), st.lists(ms, max_size=4)
    ),
)
environments = st.builds(
    Environment,
    python=optional_text,
    platform=optional_text,
    num_cpus=st.none() | st.integers(1, 512),
    num_threads=st.none() | st.integers(1, 512),
    torch=optional_text,
    cuda=optional_text,
    device_name=optional_text,
    gpu_names=st.lists(names, max_size=2),
    device_memory_bytes=st.none() | st.integers(1, 1 << 40),
)
windows = st.builds(
    Window, num_warmup=counts, num_measured=counts, num_unsynced=counts, num_synced=counts
)
verdicts = st.builds(
    Verdict,
    bound=st.sampled_from(BOUNDS),
    why=st.text(max_size=40),
    evidence=scalar_maps,
    levers=st.lists(st.text(max_size=20), max_size=3),
)
trials = st.builds(
    Trial, index=counts, metrics=metric_maps, bound=st.none() | st.sampled_from(BOUNDS)
)


def run_infos(mode: str) -> st.SearchStrategy[RunInfo]:
    return st.builds(
        RunInfo,
        mode=st.just(mode),
        model=optional_text,
        family=st.none() | st.sampled_from(["yolo9", "yolox"]),
        weights=optional_text,
        random_init=st.none() | st.booleans(),
        fused=st.none() | st.booleans(),
        device=st.none() | st.sampled_from(["cpu", "cuda", "cuda:0"]),
        batch=st.none() | st.integers(1, 1024),
        imgsz=st.none() | st.integers(32, 2048),
        amp=st.none() | st.booleans(),
        num_images=st.none() | st.integers(1, 10**6),
        dataset_yaml=optional_text,
        batches_per_epoch=st.none() | st.integers(1, 10**6),
        num_workers=st.none() | st.integers(0, 64),
        config=st.dictionaries(names, json_values, max_size=4),
        overrides=st.lists(st.text(max_size=20), max_size=3),
    )


@st.composite
def profiles(draw: st.DrawFn) -> Profile:
    """A complete, valid v2 Profile (kind and run.mode agree)."""
    kind = draw(st.sampled_from(["train", "infer"]))
    return Profile(
        kind=kind,
        created=draw(st.none() | st.just("2025-01-02T03:04:05Z")),
        tool=Tool(version=draw(st.sampled_from(["2.0.0", "2.0.0.dev0"]))),
        run=draw(run_infos("training" if kind == "train" else "inference")),
        environment=draw(environments),
        window=draw(windows),
        samples=draw(samples),
        trace=draw(st.none() | trace_analyses()),
        notes=draw(st.lists(st.text(max_size=20), max_size=2)),
        metrics=draw(metric_maps),
        verdict=draw(st.none() | verdicts),
        trials=draw(st.lists(trials, max_size=3)),
        artifacts=Artifacts(trace=draw(optional_text)),
        legacy_v1=draw(st.none() | st.dictionaries(names, json_values, max_size=4)),
    )
