"""The Profile document (`libreyolo.profile/v2`): what `profile.json` holds, as typed structs.

This module is the contract between collectors, the trace analyser and the readers. It holds
data only: no I/O, no analysis, and it imports no torch, numpy or hydra. Structs are msgspec
structs so that decoding validates every key and type in one pass (a mistyped file gives a
one-line reason, never a KeyError), and the published JSON Schema is generated from them.

Units: every numeric key ends in its unit (`_ms`, `_us`, `_bytes`), shares are fractions 0..1
named `share`, counts are `num_*`. Totals are over the analysed window; readers divide by
`TraceAnalysis.num_steps` for per-step values.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from libreyolo.document.version import SCHEMA

Scalar = float | int | bool | str | None
Mode = Literal["training", "inference"]
Kind = Literal["train", "infer"]


class _Struct(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=False):
    """Base: immutable, keyword-only, tolerant of unknown keys (additive changes stay readable)."""


class Tool(_Struct, kw_only=True):
    """The program that wrote the document."""

    name: str = "libreyolo"
    version: str


class Environment(_Struct, kw_only=True):
    """Where the measurement ran; null when unknown (e.g. a profile built from a trace)."""

    python: str | None = None
    platform: str | None = None
    num_cpus: int | None = None
    num_threads: int | None = None
    torch: str | None = None
    cuda: str | None = None
    device_name: str | None = None
    gpu_names: list[str] = []


class RunInfo(_Struct, kw_only=True):
    """How the profile was made: mode, model and the fully resolved config."""

    mode: Mode
    model: str | None = None
    weights: str | None = None
    device: str | None = None
    batch: int | None = None
    imgsz: int | None = None
    amp: bool | None = None
    config: dict[str, Any] = {}
    overrides: list[str] = []


class Window(_Struct, kw_only=True):
    """The measured window: warmup, measured iterations and their unsynced/synced split."""

    num_warmup: int = 0
    num_measured: int = 0
    num_unsynced: int = 0
    num_synced: int = 0


class StepSample(_Struct, kw_only=True):
    """One measured training step or inference iteration, as the collector timed it.

    Unsynced samples carry the honest `wall_ms` (and `dataload_ms` for training); synced samples
    carry the per-phase wall times in `phase_ms` and are used for composition only.
    """

    index: int
    synced: bool
    wall_ms: float
    dataload_ms: float | None = None
    phase_ms: dict[str, float] = {}


class TraceStep(_Struct, kw_only=True):
    """One `ProfilerStep#N` of the trace (or the whole trace when it has none)."""

    index: int
    start_us: float
    cpu_ms: float  # CPU-side span of the ProfilerStep range
    gpu_span_ms: float | None = None  # step start to the end of the last GPU work it launched
    gpu_busy_ms: float = 0.0  # union of GPU intervals inside the step's device-side span
    num_kernels: int = 0
    num_launches: int = 0
    num_mallocs: int = 0


class Device(_Struct, kw_only=True):
    """One GPU seen in the trace and its busy time over the analysed window."""

    id: int
    name: str | None = None
    num_sms: int | None = None
    busy_ms: float = 0.0  # union of kernel, memcpy and memset intervals
    kernel_busy_ms: float = 0.0  # union of kernel intervals only


class CallStat(_Struct, kw_only=True):
    """Time and count of one kernel or op inside one phase."""

    total_ms: float
    num_calls: int
    self_ms: float | None = None  # ops only: exclusive CPU time


class KernelStat(_Struct, kw_only=True):
    """One GPU kernel (aggregated by full name) over the analysed window."""

    name: str
    category: str
    tensor_core: bool
    total_ms: float
    num_calls: int
    phases: dict[str, CallStat] = {}


class OpStat(_Struct, kw_only=True):
    """One aten/autograd op (aggregated by name): self and total CPU time over the window.

    `self_ms` is null for migrated v1 files, which stored inclusive time only.
    """

    name: str
    self_ms: float | None
    total_ms: float
    num_calls: int
    phases: dict[str, CallStat] = {}


class CategoryStat(_Struct, kw_only=True):
    """Kernel time of one category over the window."""

    name: str
    total_ms: float
    num_kernels: int


class PhaseStat(_Struct, kw_only=True):
    """One phase (`step/<phase>` range or a recognised label) over the window."""

    name: str
    gpu_ms: float = 0.0  # kernel time attributed through correlation ids
    cpu_ms: float | None = None  # CPU-side time inside the phase ranges (trace), if known
    wall_ms_per_step: float | None = None  # synced composition from the collector, if measured
    num_kernels: int = 0
    num_ops: int = 0
    num_unique_kernels: int = 0


class LaunchStat(_Struct, kw_only=True):
    """Launch API calls over the window and their measured host cost."""

    num_launches: int = 0
    by_api: dict[str, int] = {}
    num_memcpy_calls: int = 0
    host_us_per_launch: float | None = None  # median CPU duration of one launch call


class Memory(_Struct, kw_only=True):
    """Device memory over the window."""

    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    num_alloc_retries: int | None = None
    num_mallocs: int = 0  # cudaMalloc/cudaFree calls (runtime and driver) over the window
    thrash: bool = False


class TraceAnalysis(_Struct, kw_only=True):
    """What the trace analyser extracts from one Chrome trace."""

    source: Literal["profiler_steps", "whole_trace"]
    time_unit: Literal["us", "ns"] = "us"
    num_steps: int  # ProfilerSteps analysed; 0 when the whole trace is one window
    window_ms: float  # measured window: first step start to last step end (or whole trace)
    has_gpu: bool
    steps: list[TraceStep] = []
    devices: list[Device] = []
    gpu_busy_ms: float = 0.0  # primary device: union of kernel/memcpy/memset, clipped to window
    # (the utilisation window: first step start to last step end on the CPU side)
    gpu_kernel_busy_ms: float = 0.0  # primary device: kernel-only union
    # Device-side window: first step start to the end of the last GPU work the steps launched
    # (the GPU may lag the CPU); step time and host overhead of bare traces are measured on it.
    device_window_ms: float = 0.0
    device_busy_ms: float = 0.0  # primary device: union over the device-side window
    memcpy_ms: float = 0.0  # union of memcpy and memset intervals
    kernel_sum_ms: float = 0.0  # plain sum of kernel durations (for mean kernel time)
    num_kernels: int = 0
    tensor_core_ms: float = 0.0  # tensor-core kernels, attention kernels on tensor cores included
    attention_ms: float = 0.0
    launches: LaunchStat = LaunchStat()
    memory: Memory = Memory()
    phases: list[PhaseStat] = []
    categories: list[CategoryStat] = []
    kernels: list[KernelStat] = []
    ops: list[OpStat] = []
    notes: list[str] = []


class Samples(_Struct, kw_only=True):
    """Raw per-iteration samples from the collector (absent for trace-only profiles)."""

    steps: list[StepSample] = []
    latency_ms: list[float] = []  # inference: unsynced end-to-end latency per iteration
    stage_ms: dict[str, list[float]] = {}  # inference: synced per-stage samples


class Verdict(_Struct, kw_only=True):
    """The bottleneck label, why, the numbers behind it and what to try."""

    bound: str
    why: str
    evidence: dict[str, Scalar] = {}
    levers: list[str] = []


class Trial(_Struct, kw_only=True):
    """One trial of a `--repeat N` measurement: its flat metrics and verdict."""

    index: int
    metrics: dict[str, Scalar]
    bound: str | None = None


class Artifacts(_Struct, kw_only=True):
    """Files that belong to the profile, relative to the document."""

    trace: str | None = None


class Profile(_Struct, kw_only=True):
    """A complete `libreyolo.profile/v2` document."""

    schema: str = SCHEMA
    kind: Kind
    created: str | None  # UTC, ISO 8601; null when unknown (migrated v1 files)
    tool: Tool
    run: RunInfo
    environment: Environment = Environment()
    window: Window = Window()
    samples: Samples = Samples()
    trace: TraceAnalysis | None = None
    metrics: dict[str, Scalar] = {}
    verdict: Verdict | None = None
    trials: list[Trial] = []
    artifacts: Artifacts = Artifacts()
    legacy_v1: dict[str, Any] | None = None
