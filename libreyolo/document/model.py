"""The Profile document (`libreyolo.profile/v2`): what `profile.json` holds, as typed structs.

This module is the contract between collectors, the trace analyser and the readers. It holds
data only: no I/O, no analysis, and it imports no torch, numpy or hydra. The classes are
frozen, keyword-only `msgspec.Struct`s: msgspec builds them in C when this module is imported,
where generating dataclasses cost a reader's start-up more than reading the file. `convert.py`
validates every key and type when a document is read (a mistyped file gives a one-line reason,
never a KeyError); the published JSON Schema is generated from these classes.

Units: every numeric key ends in its unit (`_ms`, `_us`, `_bytes`), shares are fractions 0..1
named `share`, counts are `num_*`. Totals are over the analysed window; readers divide by
`TraceAnalysis.num_steps` for per-step values.
"""

# No `from __future__ import annotations`: real annotation objects let the reader-side converter
# skip evaluating ~150 annotation strings at every start-up.
from typing import Any, Literal

import msgspec
import msgspec.structs

from libreyolo.document.mode import Mode, RunMode
from libreyolo.document.version import SCHEMA
from libreyolo.document.world import World

Scalar = float | int | bool | str | None


# Every class: frozen, keyword-only. Unknown keys are ignored on read (convert.py), so
# additive schema changes stay readable.


class Tool(msgspec.Struct, frozen=True, kw_only=True):
    """The program that wrote the document."""

    name: str = "libreyolo"
    version: str


class Environment(msgspec.Struct, frozen=True, kw_only=True):
    """Where the measurement ran; null when unknown (e.g. a profile built from a trace)."""

    python: str | None = None
    platform: str | None = None
    num_cpus: int | None = None
    num_threads: int | None = None
    torch: str | None = None
    cuda: str | None = None
    device_name: str | None = None
    gpu_names: list[str] = msgspec.field(default_factory=list)
    # The profiled device's memory (CUDA: total_memory); None on a CPU or when unknown.
    device_memory_bytes: int | None = None


class Trainer(msgspec.Struct, frozen=True, kw_only=True):
    """The training environment whose own trainer was measured (`profile run --trainer`):
    libreyolo 1.x's `libreyolo train`, run by `python` with the words `argv`. `command` is
    that training as one command line a shell runs as is (the environment's own executable,
    its thread cap); `libreyolo` and `torch` are that environment's versions."""

    python: str
    libreyolo: str
    torch: str
    argv: list[str] = msgspec.field(default_factory=list)
    command: str | None = None


class RunInfo(msgspec.Struct, frozen=True, kw_only=True):
    """How the profile was made: what the collector measured (the fields) and what it was
    asked to measure (`config`, the resolved config, stored once).

    The fields are facts of the run, which may differ from the config: `batch` is the one
    AutoBatch fitted for `batch: -1`, `imgsz` the side rounded to the stride (infer's 0: the
    model's own), `device` the resolved torch device, `amp` whether AMP or `--half` took
    effect. None: not recorded (1.6.0 files, bare traces, or not this mode's)."""

    mode: RunMode  # the stored spelling of `Profile.kind` (Mode.noun); code reads `kind`
    model: str | None = None
    family: str | None = None  # the registry family that built the model (`yolo9`, `yolox`)
    weights: str | None = None
    random_init: bool | None = None  # no weights could be had: randomly initialised
    fused: bool | None = None  # inference: the model ran fused (`model.fuse` took effect)
    device: str | None = None
    batch: int | None = None
    imgsz: int | None = None
    amp: bool | None = None
    num_images: int | None = None  # images decoded (inference) or in the training set
    dataset_yaml: str | None = None  # training: the dataset YAML the data came from
    batches_per_epoch: int | None = None  # training: full batches one epoch holds
    num_workers: int | None = None  # training: DataLoader workers started (config's, capped)
    # The resolved config (`libreyolo.config.schema.ProfileConfig` as plain JSON). Files
    # written before the typed fields above held a flat copy of the collector's settings here
    # with those facts among them, and the composed config under `resolved`; reading lifts the
    # facts into the fields (document/run_facts.py) and leaves this as it was written.
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    overrides: list[str] = msgspec.field(default_factory=list)
    # The device held under an exclusive per-device lease while measuring (sweeps): "gpu1"
    # is physical GPU 1 whatever CUDA_VISIBLE_DEVICES made of it; "cpu" for CPU points.
    held_device: str | None = None
    # Set when the steps were libreyolo 1.x's own trainer's (`--trainer`), not this package's.
    trainer: Trainer | None = None
    # Training, built-in step: target rows per image the loss assigned over (1.6.0's
    # `max_labels`; None: not recorded, or trimmed to the batch's most crowded image), and this
    # package's speed-ups the run opted into (`--variant`; empty: 1.6.0's work per step).
    max_labels: int | None = None
    variants: list[str] = msgspec.field(default_factory=list)
    # Training, built-in step: libreyolo 1.6.0's training keys the step ran with (its config's
    # names: augmentation rates and ranges, optimizer, EMA; empty: not recorded), and those
    # taken from the training config the checkpoint carries (`--weights` of a 1.6.0 trainer).
    train_keys: dict[str, Any] = msgspec.field(default_factory=dict)
    adopted_keys: list[str] = msgspec.field(default_factory=list)
    # The process that measured (the trainer probe's, with `trainer`); None in older files.
    pid: int | None = None
    # `--repeat` of two or more: true when each trial ran in a fresh process of its own, false
    # when all ran in one (`--repeat-in-process`); None for a single trial and older files.
    isolated_trials: bool | None = None


class Window(msgspec.Struct, frozen=True, kw_only=True):
    """The measured window: warmup, measured iterations and their unsynced/synced split."""

    num_warmup: int = 0
    num_measured: int = 0
    num_unsynced: int = 0
    num_synced: int = 0
    # Overhead calibration: after the traced unsynced half, `num_bare` more unsynced iterations
    # run without the profiler (`samples.bare_ms`). `profiler_on` says whether the unsynced half
    # ran under the torch profiler at all; None for files that predate it.
    num_bare: int = 0
    profiler_on: bool | None = None


class StepSample(msgspec.Struct, frozen=True, kw_only=True):
    """One measured training step or inference iteration, as the collector timed it.

    Unsynced samples carry the honest `wall_ms` (and `dataload_ms` for training); synced samples
    carry the per-phase wall times in `phase_ms` and are used for composition only.
    """

    index: int
    synced: bool
    wall_ms: float
    dataload_ms: float | None = None
    phase_ms: dict[str, float] = msgspec.field(default_factory=dict)
    # Host sampling (schedstat of every sampled thread, summed; null where not measured):
    # time on a CPU, time runnable but waiting for one, and the measuring process's
    # involuntary context switches (getrusage) during this step.
    cpu_ms: float | None = None
    cpu_wait_ms: float | None = None
    num_involuntary_switches: int | None = None


class Host(msgspec.Struct, frozen=True, kw_only=True):
    """The CPUs the measurement got over its measured steps (Linux /proc and getrusage).

    Sampled threads: every thread of the measuring process and of its DataLoader workers.
    `measurable` false: the platform has no per-thread schedstat (macOS, Windows), and every
    other field is null. A profile without `host` (v1, trace-only, older v2) was not sampled.
    """

    measurable: bool
    usable_cpus: int | None = None  # os.sched_getaffinity: the CPUs this process may run on
    intra_op_threads: int | None = None  # torch.get_num_threads() while measuring
    num_workers: int | None = None  # DataLoader worker processes sampled
    num_threads_sampled: int | None = None  # most threads seen in one step, workers included
    load_avg_1m: float | None = None  # at the end of the window (it trails by a minute)
    runnable_avg: float | None = None  # mean runnable tasks on the host at the steps' ends
    steal_frac: float | None = None  # hypervisor steal / all CPU time of the host, window
    cpu_ms: float | None = None  # on-CPU time, summed over sampled threads and measured steps
    cpu_wait_ms: float | None = None  # runnable-but-waiting time, same sum
    worker_cpu_ms: float | None = None  # the DataLoader workers' share of cpu_ms
    worker_cpu_wait_ms: float | None = None  # the workers' share of cpu_wait_ms
    num_involuntary_switches: int | None = None  # measuring process, measured steps


class HostMemory(msgspec.Struct, frozen=True, kw_only=True):
    """The measuring process's resident memory over the window after warmup (Linux).

    `peak_rss_bytes` is the process's own peak: the kernel's high-water mark of its resident
    set (VmHWM), reset as the first iteration after warmup begins and read as the last one
    ends (the window's own peak, not the process's since it started), less
    `library_rss_bytes`, the file-backed pages resident then (RssFile: shared libraries' code
    and data, mapped files; shared with other processes, dropped under pressure, and counted
    by a forked process only where it touched them). Profiles without `library_rss_bytes`
    (written before 2026-12) hold the VmHWM itself. `baseline_rss_bytes` is the process's own
    resident memory (RssAnon + RssShmem) as measuring began, before the model was built: the
    interpreter, torch and this tool. DataLoader worker processes are not included (their
    pages are their own processes' RSS, and forked pages they share with this process would
    count twice in a sum).
    """

    peak_rss_bytes: int | None = None
    library_rss_bytes: int | None = None
    baseline_rss_bytes: int | None = None


# `TensorMemory.categories`, in the order readers list them.
TENSOR_CATEGORIES = (
    "params",
    "buffers",
    "grads",
    "optimizer",
    "ema",
    "inputs",
    "activations",
    "temporaries",
)


class BlockMemory(msgspec.Struct, frozen=True, kw_only=True):
    """The activations one block of the model (its name cut to two parts, e.g.
    "backbone.elan1"; "(loss)" for the loss's) holds at the step's tensor peak."""

    name: str
    bytes: int


class PeakPoint(msgspec.Struct, frozen=True, kw_only=True):
    """A smaller batch's tracked step: the highest tensor total reached in each phase."""

    batch: int
    phase_peak_bytes: dict[str, int]


class TensorMemory(msgspec.Struct, frozen=True, kw_only=True):
    """Tensor memory by category over one training step after the window (untimed; the
    step's tensors only: the allocator's slack, the interpreter and the loader are not in it).

    `categories` holds every category's bytes at the step's peak: params, buffers, grads,
    optimizer (its state), ema (the EMA copy's weights), inputs (the batch), activations (what
    the forward and the loss made and autograd keeps) and temporaries (what the backward and
    the optimizer made besides gradients); they sum to `peak_bytes`. `phase_at_peak` is the
    step's phase at the peak (forward, backward or optimizer)."""

    peak_bytes: int
    categories: dict[str, int]
    phase_at_peak: str
    top_blocks: list[BlockMemory] = msgspec.field(default_factory=list)  # largest first
    batch: int  # the images of the tracked step (the run's batch)
    imgsz: int
    track_ms: float  # the tracked steps' wall time (the probes' too), outside the window
    # The highest total reached in each phase of that step (`peak_bytes` is the largest).
    phase_peak_bytes: dict[str, int] = msgspec.field(default_factory=dict)
    # Steps at two smaller batches, tracked first: a line through them per phase predicts the
    # peak at any batch (`analysis.tensor_memory.predict_peak`); empty where none was taken.
    probes: list[PeakPoint] = msgspec.field(default_factory=list)


# How `Flops` counts (torch.utils.flop_counter, the convention of the YOLO authors' tables).
FLOP_CONVENTION = (
    "2 FLOPs per multiply-add; convolutions, matmul, addmm, bmm and attention counted "
    "(torch.utils.flop_counter, grouped-convolution weight gradients corrected); elementwise, "
    "normalisation and pooling ops not counted"
)


class Flops(msgspec.Struct, frozen=True, kw_only=True):
    """The FLOPs of one image through the model the window ran, counted once, before the
    window, on fake tensors (shapes only: no real work, nothing the window measures changes).

    Inference: the model's forward (preprocess and NMS apart). Training: the forward and the
    backward of the model (the loss's few FLOPs and the optimizer apart)."""

    per_image: float  # inference: the forward; training: forward + backward
    forward_per_image: float
    backward_per_image: float | None = None  # training only
    batch: int  # the input counted: (batch, 3, imgsz, imgsz); per image = count / batch
    imgsz: int
    count_ms: float  # the counter's own wall time, outside the window (when it counted)
    convention: str = FLOP_CONVENTION
    cached: bool = False  # read from this machine's cache: count_ms is the original count's


class Peak(msgspec.Struct, frozen=True, kw_only=True):
    """A FLOP/s ceiling of the measured device in the window's math dtype.

    `table`: the dense (not 2:4-sparse) datasheet peak of a known GPU, `reference` naming the
    datasheet. `measured`: the best of a short calibrated GEMM on this device and dtype
    (`reference` gives its shape and runs), cached per machine, dtype and thread count."""

    source: Literal["table", "measured"]
    dtype: str  # fp32 | tf32 | fp16 | bf16
    tflops: float
    reference: str
    cached: bool | None = None  # measured: read from the per-machine cache, not re-run now
    calibration_ms: float | None = None  # measured: what the calibration cost when it ran
    contended: bool | None = None  # measured: the host took CPU from the calibration


class Energy(msgspec.Struct, frozen=True, kw_only=True):
    """The GPU's energy over the window's unsynced iterations (the ones `img_per_s` is timed
    on), from NVML's total-energy counter read at their two ends (Volta and newer)."""

    joules: float
    window_ms: float  # wall time between the two counter reads
    num_images: int  # images those iterations processed
    power_limit_w: float | None = None  # the enforced power limit while measuring
    sm_clock_mhz: int | None = None  # the SM clock at the window's end
    gpu: str | None = None  # NVML's name of the GPU read


class Compute(msgspec.Struct, frozen=True, kw_only=True):
    """How far the window is from the hardware's limit: what one image costs in FLOPs, the
    device's peaks in the math dtype the window ran, and (CUDA, NVML) the energy it drew.
    `flops` null: the count failed (the notes say why); `peaks` empty: no peak is known."""

    math_dtype: str  # fp32 | tf32 | fp16 | bf16: what the convolutions ran in
    flops: Flops | None = None
    peaks: list[Peak] = msgspec.field(default_factory=list)
    energy: Energy | None = None


class Compiled(msgspec.Struct, frozen=True, kw_only=True):
    """What torch.compile did before and during the window (`--exec compile`).

    `compile_s` is the wall time of the first call, made before the warmup: dynamo traced the
    model, the backend compiled (and under max-autotune benchmarked) its kernels, and the call
    ran once. `num_graphs` and `graph_breaks` are dynamo's own counts after that call;
    `window_recompiles` counts compiles during the warmup and measured runs: nonzero means the
    window was not a steady state."""

    mode: str  # default | reduce-overhead | max-autotune
    backend: str  # inductor | aot_eager | eager ...
    dynamic: bool
    compile_s: float
    num_graphs: int
    graph_breaks: int
    break_reasons: list[str] = msgspec.field(default_factory=list)  # dynamo's, at most 5, trimmed
    warmup_recompiles: int = 0
    window_recompiles: int = 0


class Exported(msgspec.Struct, frozen=True, kw_only=True):
    """The ONNX export ONNX Runtime ran (`--exec onnxruntime`). `export_s` is the export's
    own wall time, also when this run found it cached (`cached`) in `path`."""

    export_s: float
    cached: bool
    opset: int
    exporter: str  # torch.onnx's exporter: torchscript
    path: str
    onnxruntime: str  # ONNX Runtime's version
    provider: str  # CPUExecutionProvider | CUDAExecutionProvider
    intra_op_threads: int
    session_s: float  # building the InferenceSession (graph optimisation), before the warmup
    num_nodes: int | None = None  # nodes in the optimised graph's profile, when traced


class GraphCapture(msgspec.Struct, frozen=True, kw_only=True):
    """The forward captured as one CUDA graph (`--exec cudagraphs`): capture time, before the
    warmup, and how many captures the run made (more than one: the input shape changed)."""

    capture_s: float
    num_captures: int = 1


class Agreement(msgspec.Struct, frozen=True, kw_only=True):
    """How far a run that is not eager fp32 (another execution mode, `--half`) still detects
    what eager fp32 detects on the same images (`measure/agreement.py`), checked after the
    window. `recall`: eager's boxes the mode found (same class, IoU >= 0.5); `precision`: the
    mode's boxes eager found; both None when eager found nothing (`note` says why)."""

    reference: str = "eager fp32"
    num_images: int
    reference_boxes: int  # eager's boxes, ties aside
    boxes: int  # the mode's boxes, ties aside
    # Unmatched boxes a box of the other side ties with (same class, overlapping as NMS would
    # suppress, score within 1e-4): equal scores ordered either way, counted on neither side.
    ties: int = 0
    recall: float | None = None
    precision: float | None = None
    max_abs_diff: float | None = None  # of the raw outputs; None when their shapes differ
    max_rel_diff: float | None = None  # max_abs_diff / the largest |eager output|
    note: str | None = None  # why there was nothing to agree on (random weights, no boxes)

    def score(self) -> float | None:
        """The one number judged against the floor: the lower of recall and precision, each
        where defined; None when neither side detected anything (nothing to agree on)."""
        known = [v for v in (self.recall, self.precision) if v is not None]
        return min(known) if known else None

    def disagrees(self, floor: float, max_rel_diff: float = 0.01) -> bool:
        """Whether the run is not the same model as eager: its detections agree below `floor`,
        or its raw outputs differ by more than `max_rel_diff` of their scale (fp32 runtimes
        differ by ~1e-6 of it, fp16 by ~1e-3; another model's weights by far more)."""
        score = self.score()
        far = self.max_rel_diff is not None and self.max_rel_diff > max_rel_diff
        return far or (score is not None and score < floor)


class Execution(msgspec.Struct, frozen=True, kw_only=True):
    """How the model ran, with what reproduces it. `name`: eager | compile | cudagraphs |
    onnxruntime; `channels_last`: inputs and weights ran NHWC. Exactly one of `compiled`,
    `exported` and `graph` is set for the non-eager modes."""

    name: str
    channels_last: bool
    torch: str
    compiled: Compiled | None = None
    exported: Exported | None = None
    graph: GraphCapture | None = None
    # Agreement with eager fp32 (inference, when the run was not eager fp32); None otherwise
    # and in files that predate it.
    agreement: Agreement | None = None


class TraceStep(msgspec.Struct, frozen=True, kw_only=True):
    """One `ProfilerStep#N` of the trace (or the whole trace when it has none)."""

    index: int
    start_us: float
    cpu_ms: float  # CPU-side span of the ProfilerStep range
    gpu_span_ms: float | None = None  # step start to the end of the last GPU work it launched
    gpu_busy_ms: float = 0.0  # union of GPU intervals inside the step's device-side span
    num_kernels: int = 0
    num_launches: int = 0
    num_mallocs: int = 0


class Device(msgspec.Struct, frozen=True, kw_only=True):
    """One GPU seen in the trace and its busy time over the analysed window."""

    id: int
    name: str | None = None
    num_sms: int | None = None
    busy_ms: float = 0.0  # union of kernel, memcpy and memset intervals
    kernel_busy_ms: float = 0.0  # union of kernel intervals only
    # Communication (NCCL and other collective kernels, `classify.COMMUNICATION`): the union of
    # their intervals, and the part of it during which a computation kernel (any other
    # kernel) also ran, as HolisticTraceAnalysis's get_comm_comp_overlap counts it. None in
    # files that predate them.
    comm_busy_ms: float | None = None
    comm_overlap_ms: float | None = None


class CallStat(msgspec.Struct, frozen=True, kw_only=True):
    """Time and count of one kernel or op inside one phase."""

    total_ms: float
    num_calls: int
    self_ms: float | None = None  # ops only: exclusive CPU time


class KernelStat(msgspec.Struct, frozen=True, kw_only=True):
    """One GPU kernel (aggregated by full name) over the analysed window."""

    name: str
    category: str
    tensor_core: bool
    total_ms: float
    num_calls: int
    phases: dict[str, CallStat] = msgspec.field(default_factory=dict)
    # The aten op that launched most of this kernel's time; None when unknown: v1 files, no
    # enclosing op.
    op: str | None = None


class OpStat(msgspec.Struct, frozen=True, kw_only=True):
    """One aten/autograd op (aggregated by name): self and total CPU time over the window.

    `self_ms` is null for migrated v1 files, which stored inclusive time only.
    """

    name: str
    self_ms: float | None
    total_ms: float
    num_calls: int
    phases: dict[str, CallStat] = msgspec.field(default_factory=dict)


class CategoryStat(msgspec.Struct, frozen=True, kw_only=True):
    """Kernel time of one category over the window."""

    name: str
    total_ms: float
    num_kernels: int


class PhaseStat(msgspec.Struct, frozen=True, kw_only=True):
    """One phase (`step/<phase>` range or a recognised label) over the window."""

    name: str
    gpu_ms: float = 0.0  # kernel time attributed through correlation ids
    cpu_ms: float | None = None  # CPU-side time inside the phase ranges (trace), if known
    wall_ms_per_step: float | None = None  # synced composition from the collector, if measured
    num_kernels: int = 0
    num_ops: int = 0
    num_unique_kernels: int = 0


class LaunchStat(msgspec.Struct, frozen=True, kw_only=True):
    """Launch API calls over the window and their measured host cost."""

    num_launches: int = 0
    by_api: dict[str, int] = msgspec.field(default_factory=dict)
    num_memcpy_calls: int = 0
    host_us_per_launch: float | None = None  # median CPU duration of one launch call


class Memory(msgspec.Struct, frozen=True, kw_only=True):
    """Device memory over the window."""

    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    num_alloc_retries: int | None = None
    num_mallocs: int = 0  # cudaMalloc/cudaFree calls (runtime and driver) over the window
    thrash: bool = False
    # Fragmentation: the window's peak of cached blocks split by an allocation and not in use
    # (`inactive_split_bytes`), and the largest free cached block as the window ended (None:
    # not recorded, in files that predate them and in traces read without the allocator).
    peak_inactive_split_bytes: int | None = None
    largest_free_block_bytes: int | None = None


class HealthCheck(msgspec.Struct, frozen=True, kw_only=True):
    """One check of a trace before its analysis is believed (`kineto/health.py`)."""

    name: str  # e.g. "launches_without_gpu_activity"
    ok: bool
    found: float  # what the trace holds (a count, or a share for the spread checks)
    limit: float  # the most a sound trace may hold
    meaning: str  # what a failure means, in words, for people


class TraceHealth(msgspec.Struct, frozen=True, kw_only=True):
    """The trace's health: `suspect` when any check failed; the checks, passed or not."""

    suspect: bool
    checks: list[HealthCheck] = msgspec.field(default_factory=list)

    def failed(self) -> list[HealthCheck]:
        return [check for check in self.checks if not check.ok]


class TraceAnalysis(msgspec.Struct, frozen=True, kw_only=True):
    """What the trace analyser extracts from one Chrome trace."""

    source: Literal["profiler_steps", "whole_trace"]
    time_unit: Literal["us", "ns"] = "us"
    num_steps: int  # ProfilerSteps analysed; 0 when the whole trace is one window
    window_ms: float  # measured window: first step start to last step end (or whole trace)
    has_gpu: bool
    steps: list[TraceStep] = msgspec.field(default_factory=list)
    devices: list[Device] = msgspec.field(default_factory=list)
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
    launches: LaunchStat = msgspec.field(default_factory=LaunchStat)
    memory: Memory = msgspec.field(default_factory=Memory)
    phases: list[PhaseStat] = msgspec.field(default_factory=list)
    categories: list[CategoryStat] = msgspec.field(default_factory=list)
    kernels: list[KernelStat] = msgspec.field(default_factory=list)
    ops: list[OpStat] = msgspec.field(default_factory=list)
    # Host-side collectives (gloo, on its own threads) in the window: their union, and the part
    # of it during which the step's thread ran an ATen op (computation beside the collective:
    # HTA's overlap, with the CPU's ops for kernels). None where no gloo collective ran and in
    # files that predate it; GPU collectives are the devices' `comm_busy_ms`.
    host_comm_ms: float | None = None
    host_comm_overlap_ms: float | None = None
    # The exposed rest (`host_comm_ms − host_comm_overlap_ms`) by the phase it fell in (whole
    # window, ms); empty where none, and in files that predate it.
    host_comm_exposed_ms: dict[str, float] = msgspec.field(default_factory=dict)
    # Caveats the analyser found while reducing the trace (no ProfilerStep, unlinked activity);
    # what the run itself noted is `Profile.notes`.
    notes: list[str] = msgspec.field(default_factory=list)
    # Checked before the numbers above are believed (missing, displaced or impossible GPU
    # records); None in files that predate it.
    health: TraceHealth | None = None


class Samples(msgspec.Struct, frozen=True, kw_only=True):
    """Raw per-iteration samples from the collector (absent for trace-only profiles)."""

    steps: list[StepSample] = msgspec.field(default_factory=list)
    latency_ms: list[float] = msgspec.field(
        default_factory=list
    )  # inference: unsynced end-to-end latency per iteration
    stage_ms: dict[str, list[float]] = msgspec.field(
        default_factory=dict
    )  # inference: synced per-stage samples
    bare_ms: list[float] = msgspec.field(
        default_factory=list
    )  # unsynced wall per iteration without the profiler (overhead calibration)
    # training with AMP: indices into `steps` whose optimiser update GradScaler skipped
    # (inf/NaN fp16 gradients), so their optimizer phase did no update
    amp_skipped_steps: list[int] = msgspec.field(default_factory=list)


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """The bottleneck label, why, the numbers behind it and what to try."""

    bound: str
    why: str
    evidence: dict[str, Scalar] = msgspec.field(default_factory=dict)
    levers: list[str] = msgspec.field(default_factory=list)
    # A `contended` verdict keeps what the same numbers would say on a quiet host.
    quiet_bound: str | None = None
    quiet_why: str | None = None


class VariantTrial(msgspec.Struct, frozen=True, kw_only=True):
    """One of this package's speed-ups (`--variant`) the run did not use, timed beside what it
    did: the part of the step the variant changes, run both ways on the same batch after the
    window (never inside it), alternated, `repeats` times each; medians in ms."""

    variant: str  # e.g. "trimmed_targets"
    part: str  # what was timed, e.g. "the loss, forward and backward, 300 target rows per image"
    as_run_ms: float
    variant_ms: float
    repeats: int


class Trial(msgspec.Struct, frozen=True, kw_only=True):
    """One trial of a `--repeat N` measurement: its flat metrics and verdict."""

    index: int
    metrics: dict[str, Scalar]
    bound: str | None = None
    pid: int | None = None  # the process that measured it; None in older files


class Artifacts(msgspec.Struct, frozen=True, kw_only=True):
    """Files that belong to the profile, relative to the document."""

    trace: str | None = None


class Profile(msgspec.Struct, frozen=True, kw_only=True):
    """A complete `libreyolo.profile/v2` document."""

    schema: str = SCHEMA
    kind: Mode
    created: str | None  # UTC, ISO 8601; null when unknown (migrated v1 files)
    tool: Tool
    run: RunInfo
    environment: Environment = msgspec.field(default_factory=Environment)
    window: Window = msgspec.field(default_factory=Window)
    samples: Samples = msgspec.field(default_factory=Samples)
    host: Host | None = None
    trace: TraceAnalysis | None = None
    # What the run noted about itself (random weights, a flag without effect, a rounded size,
    # a trace that could not be recorded...), written once when the profile is assembled; the
    # trace analyser's own caveats stay in `trace.notes`.
    notes: list[str] = msgspec.field(default_factory=list)
    # The CUDA caching allocator's own counters over the window (peaks, retries), recorded with
    # or without a trace; null on CPU and in files that predate it.
    device_memory: Memory | None = None
    # The measuring process's peak resident memory over the window; null where it could not
    # be measured (the run's notes say why) and in files that predate it.
    host_memory: HostMemory | None = None
    # Tensor memory by category over one training step after the window; null for inference,
    # where it could not be tracked (the notes say why), and in files that predate it.
    tensor_memory: TensorMemory | None = None
    # FLOPs per image, the device's peaks and energy; null in files that predate it and in
    # bare traces (nothing says what model or device they ran).
    compute: Compute | None = None
    # How the model ran (eager, compiled, a CUDA graph, ONNX Runtime); null in files that
    # predate it (they ran eager).
    execution: Execution | None = None
    metrics: dict[str, Scalar] = msgspec.field(default_factory=dict)
    verdict: Verdict | None = None
    trials: list[Trial] = msgspec.field(default_factory=list)
    # Speed-ups the run did not use, each timed on the part of the step it changes (training,
    # built-in step); empty where none applies and in files that predate it.
    variant_trials: list[VariantTrial] = msgspec.field(default_factory=list)
    # The ranks of a multi-process training run, in its world profile (`document/world.py`);
    # null for a one-process run, in each rank's own profile, and in files that predate it.
    world: World | None = None
    artifacts: Artifacts = msgspec.field(default_factory=Artifacts)
    legacy_v1: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # `kind="infer"` spelt as a plain string still gives the member: code compares members.
        msgspec.structs.force_setattr(self, "kind", Mode(self.kind))
