"""The sweep's files as typed structs: what `point.json`, `status.json`, `sweep_plan.json` and
`sweep.json` hold (docs/sweep-format.md describes them field by field).

* `PointRequest` (`point.json`, `libreyolo.sweep-point/v1`): what one point measures.
* `PointStatus` (`status.json`, `libreyolo.sweep-status/v1`): how the point went.
* `SweepPlan` (`sweep_plan.json`, `libreyolo.sweep-plan/v1`): the grid, in launch order.
* `SweepRecord` (`sweep.json`, `libreyolo.sweep/v1`) and its rows `SweepRow`, each with the
  `HeadlineMetrics` copied from its point's profile.

Like `model.py`: data only, frozen, slotted, keyword-only dataclasses (stdlib), no I/O. Every
field a reader uses carries its rule (`rules.RULE` in its metadata): the type and range it
accepts, checked on plain JSON before `convert.py` builds the struct, and published in
`sweep.schema.json`.
Unknown keys are ignored on read and absent ones take their default, so an older file (before a
field was added) and a newer one (with fields added since) both read. Fields in one
`OMIT_GROUP` are written together, or not at all while they all hold their defaults.
"""

# No `from __future__ import annotations`: the converter reads real annotation objects.
from dataclasses import dataclass, field
from typing import Literal

from libreyolo.document.convert import OMIT_GROUP
from libreyolo.document.json_value import JsonObject
from libreyolo.document.rules import (
    RULE,
    Choice,
    Count,
    Fields,
    Flag,
    Named,
    Number,
    Rule,
    Text,
    strings,
)

REQUEST_SCHEMA = "libreyolo.sweep-point/v1"
STATUS_SCHEMA = "libreyolo.sweep-status/v1"
PLAN_SCHEMA = "libreyolo.sweep-plan/v1"
SWEEP_SCHEMA = "libreyolo.sweep/v1"

# A point's status: `ok` (a profile; `reused` when a resumed sweep kept it), `failed`,
# `interrupted` (Ctrl-C or SIGTERM stopped it) or `missing` (planned, never started).
STATUSES = ("ok", "failed", "interrupted", "missing")
Status = Literal["ok", "failed", "interrupted", "missing"]
MAX_BATCH = 1 << 20  # a million images in one step: beyond any device's memory
AUTO_BATCH = -1  # a point's requested batch when the sweep auto-fits it (`--batch -1`)
MAX_IMGSZ = 1 << 16  # 65536 px a side: beyond any model's input
MAX_THREADS = 1 << 16
MAX_COUNT = 1 << 32  # points in a sweep
# Far below 2**53, so a chart padding a single value by 1 still gets an axis of some width.
MAX_METRIC = 1e15
# The writer rounds every headline metric to at most 3 decimals: a smaller positive value is
# none of its, and a chart's ticks (rounded to 10 decimals) would collapse to zero under it.
MIN_METRIC = 1e-6
MAX_PROFILE_INT = 2**64 - 1  # the largest integer a profile holds (`validate.py`)
MAX_NAME_CHARS = 4096  # PATH_MAX: point names are folder paths
MAX_TEXT_CHARS = 1 << 20  # what a status.json (MAX_SMALL_BYTES) can hold
MAX_OVERRIDES = 1024
SHA256_HEX_CHARS = 64  # a profile digest, as `hashlib.sha256().hexdigest()` writes it
# Where an MFU's peak comes from: a datasheet table, or a GEMM measured on the device.
PEAK_SOURCES = ("table", "measured")

Number_ = float | int  # a JSON number: an integer stays one when read back
METRIC: Rule = Number(MAX_METRIC, least=MIN_METRIC)
SECONDS: Rule = Number(MAX_METRIC)  # measured, not rounded: any positive value
NAME: Rule = Text(MAX_NAME_CHARS)
REASON: Rule = Text(MAX_TEXT_CHARS)
OVERRIDES: Rule = strings(MAX_OVERRIDES, MAX_NAME_CHARS)
COUNT: Rule = Count(0, MAX_COUNT)


def _meta(rule: Rule, *, group: str | None = None) -> dict[str, object]:
    """A field's metadata: its rule, and the group it is written with (`convert.OMIT_GROUP`)."""
    return {RULE: rule} if group is None else {RULE: rule, OMIT_GROUP: group}


@dataclass(frozen=True, slots=True, kw_only=True)
class PointRequest:
    """`point.json`: the resolved config a point measures and the Hydra overrides that made it;
    `device` and `held_device` are added once the device lease is taken."""

    schema: str = field(default=REQUEST_SCHEMA, metadata=_meta(Choice((REQUEST_SCHEMA,))))
    config: JsonObject  # the resolved profile config, as `config.compose.as_plain_dict` gives it
    overrides: list[str] = field(default_factory=list, metadata=_meta(OVERRIDES))
    # the leased device as the measuring process names it, and as the lease does ("gpu1":
    # physical GPU 1, "cpu")
    device: str | None = field(default=None, metadata=_meta(NAME, group="lease"))
    held_device: str | None = field(default=None, metadata=_meta(NAME, group="lease"))


@dataclass(frozen=True, slots=True, kw_only=True)
class PointStatus:
    """`status.json`: how a point went, and where its time went (seconds; epoch seconds for the
    lease's `*_at`)."""

    schema: str = field(default=STATUS_SCHEMA, metadata=_meta(Choice((STATUS_SCHEMA,))))
    status: Status = field(metadata=_meta(Choice(STATUSES)))
    reason: str | None = field(default=None, metadata=_meta(REASON))  # "" or null when ok
    # the error's code: oom, usage, crashed, ...
    code: str | None = field(default=None, metadata=_meta(NAME))
    overrides: list[str] = field(default_factory=list, metadata=_meta(OVERRIDES))
    profile: str | None = field(default=None, metadata=_meta(NAME))  # relative to the point folder
    # SHA-256 (hex) of the profile's bytes as the measurement wrote them: a resumed sweep reuses
    # the point only while its profile still holds them (written with a profile)
    profile_sha256: str | None = field(
        default=None, metadata=_meta(Text(SHA256_HEX_CHARS), group="digest")
    )
    # the measuring process
    pid: int | None = field(default=None, metadata=_meta(Count(0, MAX_PROFILE_INT)))
    held_device: str | None = field(default=None, metadata=_meta(NAME))
    lease_acquired_at: Number_ | None = field(default=None, metadata=_meta(SECONDS))
    lease_released_at: Number_ | None = field(default=None, metadata=_meta(SECONDS))
    lease_wait_s: Number_ | None = field(default=None, metadata=_meta(SECONDS))
    # inside the measurement
    measure_s: Number_ | None = field(default=None, metadata=_meta(SECONDS))
    # warmup + measured iterations
    window_s: Number_ | None = field(default=None, metadata=_meta(SECONDS))
    point_s: Number_ | None = field(default=None, metadata=_meta(SECONDS))  # the whole point
    # a resumed sweep kept this point's earlier profile (written only when true)
    reused: bool = field(default=False, metadata=_meta(Flag(null=False), group="reused"))


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepPlan:
    """`sweep_plan.json`: each planned point's folder (relative to the sweep folder) and its
    job's overrides, in launch order."""

    schema: str = field(metadata=_meta(Choice((PLAN_SCHEMA,))))
    points: dict[str, list[str]] = field(metadata=_meta(Named(OVERRIDES, MAX_NAME_CHARS)))


@dataclass(frozen=True, slots=True, kw_only=True)
class HeadlineMetrics:
    """The metrics a row copies from its point's profile (the profile's `metrics` names them);
    none at all (`{}`) for a point without a profile."""

    # the point's throughput: on several ranks the world's (`global_img_per_s`)
    img_per_s: Number_ | None = field(default=None, metadata=_meta(METRIC, group="metrics"))
    step_ms: Number_ | None = field(default=None, metadata=_meta(METRIC, group="metrics"))
    latency_p50_ms: Number_ | None = field(default=None, metadata=_meta(METRIC, group="metrics"))
    peak_vram_mb: Number_ | None = field(default=None, metadata=_meta(METRIC, group="metrics"))
    # the measuring process's peak resident memory over the window (loader workers excluded)
    peak_rss_mb: Number_ | None = field(default=None, metadata=_meta(METRIC, group="metrics"))
    # a training point's tracked step: its tensor peak, and what its probe steps predicted
    # (the table's truth column: the prediction's error on every point)
    tensor_peak_mb: Number_ | None = field(default=None, metadata=_meta(METRIC, group="metrics"))
    tensor_predicted_mb: Number_ | None = field(
        default=None, metadata=_meta(METRIC, group="metrics")
    )
    # allocator thrash
    memory_pressure: bool | None = field(default=None, metadata=_meta(Flag(), group="metrics"))
    cpu_wait_frac: Number_ | None = field(
        default=None, metadata=_meta(Number(1.0, least=MIN_METRIC), group="metrics")
    )
    # measured on a busy host
    contended: bool | None = field(default=None, metadata=_meta(Flag(), group="metrics"))
    bound: str | None = field(default=None, metadata=_meta(NAME, group="metrics"))
    # How far from the hardware's limit (the profile's `analysis/efficiency.py` keys): the model
    # FLOP rate achieved and its share of the peak `peak_source` names (a measured GEMM peak
    # that ran low can leave it above 1, so no upper bound but the metrics' own).
    achieved_tflops: Number_ | None = field(default=None, metadata=_meta(METRIC, group="metrics"))
    mfu: Number_ | None = field(default=None, metadata=_meta(METRIC, group="metrics"))
    peak_source: Literal["table", "measured"] | None = field(
        default=None, metadata=_meta(Choice(PEAK_SOURCES, null=True), group="metrics")
    )
    # the GPU's joules per image over the window (CUDA with NVML only)
    energy_j_per_img: Number_ | None = field(default=None, metadata=_meta(METRIC, group="metrics"))
    # false: the point's execution mode disagrees with eager fp32 (its speed is another model's)
    agrees: bool | None = field(default=None, metadata=_meta(Flag(), group="metrics"))
    # the ranks it trained on (`--nproc`): null for one process
    world_size: int | None = field(
        default=None, metadata=_meta(Count(2, MAX_THREADS), group="metrics")
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepRow:
    """One point of the sweep record: its status, its settings (from `point.json`), its result
    (from its profile) and its timing (from `status.json`, only when it recorded some)."""

    status: Status = field(metadata=_meta(Choice(STATUSES)))
    reason: str | None = field(default=None, metadata=_meta(REASON))
    code: str | None = field(default=None, metadata=_meta(NAME))
    overrides: list[str] = field(default_factory=list, metadata=_meta(OVERRIDES))
    batch: int | None = field(default=None, metadata=_meta(Count(1, MAX_BATCH, auto=AUTO_BATCH)))
    imgsz: int | None = field(default=None, metadata=_meta(Count(1, MAX_IMGSZ)))
    amp: bool | None = field(default=None, metadata=_meta(Flag()))
    # None: torch's default
    threads: int | None = field(default=None, metadata=_meta(Count(1, MAX_THREADS)))
    # what the profile says ran
    amp_effective: bool | None = field(default=None, metadata=_meta(Flag()))
    # the device's memory
    device_memory_mb: Number_ | None = field(default=None, metadata=_meta(METRIC))
    # how the model ran (the profile's `execution.name`; null before execution modes) and
    # what that cost before the warmup: torch.compile's first call, the ONNX export
    exec: str | None = field(default=None, metadata=_meta(NAME))
    compile_s: Number_ | None = field(default=None, metadata=_meta(SECONDS))
    export_s: Number_ | None = field(default=None, metadata=_meta(SECONDS))
    profile: str | None = field(default=None, metadata=_meta(NAME))
    metrics: HeadlineMetrics = field(
        default_factory=HeadlineMetrics, metadata=_meta(Fields(HeadlineMetrics))
    )
    verdict: str | None = field(default=None, metadata=_meta(REASON))
    reused: bool | None = field(default=False, metadata=_meta(Flag()))
    held_device: str | None = field(default=None, metadata=_meta(NAME, group="timing"))
    lease_wait_s: Number_ | None = field(default=None, metadata=_meta(SECONDS, group="timing"))
    measure_s: Number_ | None = field(default=None, metadata=_meta(SECONDS, group="timing"))
    window_s: Number_ | None = field(default=None, metadata=_meta(SECONDS, group="timing"))
    point_s: Number_ | None = field(default=None, metadata=_meta(SECONDS, group="timing"))


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepRecord:
    """`sweep.json`: every point's row and the counts, and the recommended point per imgsz.
    (Fields in the order a reader checks them: the rows first.)"""

    schema: str = field(default=SWEEP_SCHEMA, metadata=_meta(Choice((SWEEP_SCHEMA,))))
    points: dict[str, SweepRow] = field(metadata=_meta(Named(Fields(SweepRow), MAX_NAME_CHARS)))
    # the sweep folder when it was written
    sweep_dir: str | None = field(default=None, metadata=_meta(NAME))
    num_points: int | None = field(default=0, metadata=_meta(COUNT))
    num_ok: int | None = field(default=0, metadata=_meta(COUNT))
    num_reused: int | None = field(default=0, metadata=_meta(COUNT))
    num_failed: int | None = field(default=0, metadata=_meta(COUNT))
    num_interrupted: int | None = field(default=0, metadata=_meta(COUNT))
    num_missing: int | None = field(default=0, metadata=_meta(COUNT))
    chart: str | None = field(default=None, metadata=_meta(NAME))  # `sweep.png` when drawn
    # imgsz (as text) -> the name of the trusted point with the highest img/s
    recommended: dict[str, str] = field(
        default_factory=dict,
        metadata=_meta(Named(Text(MAX_NAME_CHARS, null=False), MAX_NAME_CHARS, noun="key")),
    )
