"""Typed config schema: frozen dataclasses for a profile run, registered in Hydra's ConfigStore.

Role: the one description of what `libreyolo profile run|infer` (and `libreyolo-sweep`) accept.
Packaged YAML in `libreyolo/conf/` pulls these schemas into each option's defaults list, so a typo
or a wrong type fails at composition. Names of models and datasets are plain strings resolved
later by the workload registry; no `_target_` here. Every default is a name in
`libreyolo.defaults` (the POSIX flags read the same names); `mode_defaults` is what each mode
composes to.

Must not: import torch or anything from the measuring layers, or hand `DictConfig` objects out
(`register_schemas` is the only function touching Hydra, and it returns nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from libreyolo import defaults
from libreyolo.document.mode import Mode

SCHEMA_GROUP = "schema"


class ModeOption(StrEnum):
    """The config's `mode` option, spelt as the subcommand that selects it: `run` profiles a
    training step, `infer` an inference call. The word also names the set's folder
    (`<project>/run/`); code that asks what is measured reads `measures`.

    Member names equal their values because OmegaConf converts strings to enums by name.
    """

    run = "run"
    infer = "infer"

    @property
    def measures(self) -> Mode:
        """What this option measures, in the code's one word for it."""
        return Mode.TRAIN if self is ModeOption.run else Mode.INFER


class AmpDtype(StrEnum):
    """CUDA autocast dtype for `infer --half`."""

    float16 = "float16"
    bfloat16 = "bfloat16"


_AMP_DTYPE = AmpDtype(defaults.AMP_DTYPE)  # one instance: a dataclass default is shared


@dataclass(frozen=True)
class ModelConfig:
    """Which network: a registry family, its size variant (when given) and a weights file or
    name."""

    family: str = defaults.FAMILY
    # None: the checkpoint's own size, else the weights name's, else the family's default (t).
    # A size given here (--size) must match the checkpoint: a default never overrides a file.
    size: str | None = None
    weights: str = defaults.WEIGHTS
    fuse: str = defaults.FUSE  # infer: one of defaults.FUSE_MODES


@dataclass(frozen=True)
class DatasetConfig:
    """Training data: a registry name (`synthetic`, `coco128`) or a dataset YAML path."""

    name_or_path: str = defaults.DATASET
    workers: int = defaults.WORKERS
    cache: bool = defaults.CACHE  # decode and resize every image once, before the window (RAM)


@dataclass(frozen=True)
class DeviceConfig:
    """Where to measure: a CUDA index ("0"), "cpu" or a torch device string ("cuda:1"); for
    training on several ranks, CUDA indices ("0,1": one rank each) or "cpu" with `nproc`."""

    name: str = defaults.DEVICE
    # Training ranks (DDP, one process each): `libreyolo train`'s world size. 1: one process.
    nproc: int = 1


def requested_ranks(device: Mapping[str, object]) -> int:
    """The training ranks a resolved `device` group asks for: one per listed device ("0,1"),
    else `nproc` (the measurement refuses a list and an nproc that disagree)."""
    names = str(device.get("name", defaults.DEVICE)).split(",")
    nproc = device.get("nproc", 1)
    return len(names) if len(names) > 1 else nproc if type(nproc) is int else 1


@dataclass(frozen=True)
class WindowConfig:
    """The measurement window: warmup, measured training steps, measured inference runs, repeats."""

    warmup: int = defaults.RUN_WARMUP
    steps: int = defaults.RUN_STEPS
    runs: int = defaults.INFER_RUNS
    repeat: int = defaults.REPEAT
    # Every trial of `repeat` >= 2 in this process, as before 0.x: by default each has one of
    # its own (a process's second profiler session can drop and drift: measure/trials.py).
    repeat_in_process: bool = False


class ExecMode(StrEnum):
    """How the model runs (`--exec`): see `ExecConfig`."""

    eager = "eager"
    compile = "compile"
    cudagraphs = "cudagraphs"
    onnxruntime = "onnxruntime"


_EXEC = ExecMode(defaults.EXEC)


@dataclass(frozen=True)
class ExecConfig:
    """How the model runs: `name` eager PyTorch, `compile` (torch.compile with `compile_mode`,
    `compile_backend` and `dynamic`), `cudagraphs` (the forward captured as one CUDA graph;
    inference on CUDA) or `onnxruntime` (the fused model exported to ONNX at `opset`, run by
    ONNX Runtime on the device's execution provider; inference). `channels_last` None: the
    path's own layout (inference with `--fuse full` runs NHWC; training runs 1.6.0's NCHW, and
    true there is the `channels_last` variant)."""

    name: ExecMode = _EXEC
    compile_mode: str = defaults.COMPILE_MODE  # one of defaults.COMPILE_MODES
    compile_backend: str = defaults.COMPILE_BACKEND
    dynamic: bool = False
    channels_last: bool | None = defaults.CHANNELS_LAST
    opset: int = defaults.ONNX_OPSET


@dataclass(frozen=True)
class SweepConfig:
    """How `libreyolo-sweep` measures each point (ignored by single runs).

    `isolate`: measure in a fresh child process per point. `lock_dir`: where the per-device
    lease files live; every process on the machine must agree (None: `libreyolo-gpu-locks` under
    the system temp dir). `lease_timeout_s`: how long a point waits for its device before it
    fails. `gpus`: physical GPU indices a CUDA point may lease, kept to those
    CUDA_VISIBLE_DEVICES shows when it is set (None: the visible ones, else the point's own
    device index). A CPU point's child sees no GPU. `resume`: keep a point that a
    previous sweep into the same folder measured with the same config and overrides and whose
    profile is complete (false: measure every point again).
    """

    isolate: bool = True
    lock_dir: str | None = None
    lease_timeout_s: float = 3600.0
    gpus: list[int] | None = None
    resume: bool = True


class TuneGoal(StrEnum):
    """What `hydra/sweeper=tune` searches the batch for (libreyolo.analysis.tune)."""

    knee = "knee"  # the smallest batch past which a bigger one buys no measurable img/s
    maxfit = "maxfit"  # the largest batch that fits
    latency = "latency"  # inference: the best img/s within a latency bound


@dataclass(frozen=True)
class TuneConfig:
    """How `hydra/sweeper=tune` searches along `batch` (docs/sweep.md, "Which batch").

    `goal`: knee, maxfit or latency. The batch grows geometrically from `batch_min` to
    `batch_max`; refinement measures multiples of `batch_step` only. `min_gain_pct`: a
    significant gain smaller than this is no gain (knee). `patience`: how many more doublings
    the growth tries after one that gains nothing (a curve may stall, then climb again).
    `percentile` and `max_latency_ms`: the latency bound (latency goal). `memory_budget_mb`
    (also a plain sweep's): a point that needs more memory than this does not fit (CUDA: the
    allocator is capped there; CPU: the window's peak resident memory is compared with it).
    None: the device's own memory. `remeasure`: how many more times a point that decides the
    answer is measured when it was measured on a busy host (contended); still busy, the
    series ends `contended`, with no recommendation. `rank_steps` (knee): the measured steps
    (inference: runs) of the two-trial window each new size is ranked on before the answer and
    the best are measured on the full window (a quarter of the window is a fair start); 0 (the
    default): every point on the full window. On this project's CPU, inference at 320 px ranked
    on a fifth of its window took 0.26 to 0.44 of the grid's steps and, on the median, under
    half its time; at 128 px, where steps are short, it saved steps but not time, and moved
    answers (docs/benchmarks.md).
    """

    goal: TuneGoal = TuneGoal.knee
    batch_min: int = 1
    batch_max: int = 64
    batch_step: int = 8
    min_gain_pct: float = 5.0
    patience: int = 1
    percentile: int = 99
    max_latency_ms: float | None = None
    memory_budget_mb: float | None = None
    remeasure: int = 2
    rank_steps: int = 0


@dataclass(frozen=True)
class TrainKeysConfig:
    """libreyolo 1.6.0's training keys for the built-in step, in its config's names (None: the
    training config the checkpoint carries, else 1.6.0's default for the family). They change
    the work of a step: the augmentation rates and ranges, the optimizer and its settings, the
    EMA. Every other 1.6.0 key goes in `train_args` as `key=value`. `no_aug_phase`: measure a
    step of 1.6.0's last `no_aug_epochs` (mosaic and MixUp off; YOLOX adds its L1 loss)."""

    mosaic_prob: float | None = None
    mixup_prob: float | None = None
    hsv_prob: float | None = None
    flip_prob: float | None = None
    degrees: float | None = None
    translate: float | None = None
    shear: float | None = None
    mosaic_scale: list[float] | None = None
    mixup_scale: list[float] | None = None
    optimizer: str | None = None
    lr0: float | None = None
    momentum: float | None = None
    weight_decay: float | None = None
    nesterov: bool | None = None
    ema: bool | None = None
    ema_decay: float | None = None
    no_aug_phase: bool = False

    def given(self) -> dict[str, Any]:
        """The 1.6.0 keys set here (not None), by name; `no_aug_phase` is ours, not a key."""
        return {
            name: value
            for name, value in vars(self).items()
            if name != "no_aug_phase" and value is not None
        }


@dataclass(frozen=True)
class ProfileConfig:
    """One resolved profile run. `batch` -1 means auto-fit (training: GPU memory on CUDA,
    host memory on the CPU)."""

    mode: ModeOption = ModeOption.run  # run (a training step) or infer (an inference call)
    model: ModelConfig = field(default_factory=ModelConfig)
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    device: DeviceConfig = field(default_factory=DeviceConfig)
    window: WindowConfig = field(default_factory=WindowConfig)
    exec: ExecConfig = field(default_factory=ExecConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    tune: TuneConfig = field(default_factory=TuneConfig)
    batch: int = defaults.RUN_BATCH
    imgsz: int = defaults.RUN_IMGSZ
    amp: bool = defaults.AMP
    half: bool = defaults.HALF
    amp_dtype: AmpDtype = _AMP_DTYPE
    conf: float = defaults.CONF
    iou: float = defaults.IOU
    max_det: int = defaults.MAX_DET
    trace: bool = defaults.TRACE
    include_decode: bool = defaults.INCLUDE_DECODE  # infer: decode inside the window
    source: str | None = None  # infer: an image or a folder (None: the bundled sample image)
    project: str = defaults.PROJECT
    threads: int | None = defaults.THREADS  # torch's intra-op CPU threads (None: its default)
    # run: the Python of a libreyolo 1.x environment (or its folder) whose own `libreyolo train`
    # is measured (None: this package's training step); `train_args`: more `key=value` words
    # for that `libreyolo train`; `trainer_timeout_s`: how long it may stay silent.
    trainer: str | None = defaults.TRAINER
    train_args: list[str] = field(default_factory=list)
    # run, built-in step: 1.6.0's `max_labels` (YOLOv9's target rows per image; None: its 300)
    # and the speed-ups this run opts into (names in defaults.TRAIN_VARIANTS; none: 1.6.0's work).
    max_labels: int | None = defaults.MAX_LABELS
    variants: list[str] = field(default_factory=list)
    # run: 1.6.0's training keys (with `train_args`, for the built-in step and the trainer), and
    # whether a 1.6.0 checkpoint's own training config fills the keys left unset.
    train: TrainKeysConfig = field(default_factory=TrainKeysConfig)
    checkpoint_config: bool = defaults.CHECKPOINT_CONFIG
    trainer_timeout_s: float = defaults.TRAINER_TIMEOUT_S


def mode_defaults(mode: ModeOption | str) -> ProfileConfig:
    """The config `libreyolo profile run|infer` composes with no flag: the schema's fields,
    with infer's batch, input size and warmup where the mode is `infer` (what
    conf/mode/infer.yaml sets). A direct caller of a collector starts from this."""
    if ModeOption(mode) is ModeOption.run:
        return ProfileConfig()
    return ProfileConfig(
        mode=ModeOption.infer,
        batch=defaults.INFER_BATCH,
        imgsz=defaults.INFER_IMGSZ,
        window=WindowConfig(warmup=defaults.INFER_WARMUP),
    )


# Keys left unset (`???`) in the stored schemas although the Python classes have defaults: the
# packaged defaults list always picks a dataset option, and `dataset=custom` must then demand a
# path (merging `???` onto a value would silently keep the value).
UNSET_IN_STORE: dict[str, tuple[str, ...]] = {
    "root": ("dataset.name_or_path",),
    "dataset": ("name_or_path",),
}

# ConfigStore names under a separate `schema/` group: stored under a real group, a schema would
# show up as a selectable option in --help and in the group's option list.
SCHEMAS: dict[str, type[Any]] = {
    "root": ProfileConfig,
    "model": ModelConfig,
    "dataset": DatasetConfig,
    "device": DeviceConfig,
    "window": WindowConfig,
    "exec": ExecConfig,
}


def register_schemas() -> None:
    """Store every schema under `schema/<name>` in Hydra's ConfigStore (idempotent).

    The dataclasses are frozen; OmegaConf would mark their nodes read-only and refuse merges,
    so the stored nodes are made writable. `OmegaConf.to_object` still builds the frozen class.
    """
    from hydra.core.config_store import ConfigStore
    from omegaconf import DictConfig, OmegaConf

    # `${flag:${amp}}` -> 1 or 0: sweep folders read `b4_s640_amp1`, not `ampTrue`.
    if not OmegaConf.has_resolver("flag"):
        OmegaConf.register_new_resolver("flag", lambda value: int(bool(value)))
    # `${tag:_t,${threads}}` -> `_t2`, or nothing while threads is null: a key that is usually
    # unset names a sweep folder only when set (`b4_s640_amp1_t2`; unset keeps `b4_s640_amp1`).
    if not OmegaConf.has_resolver("tag"):
        OmegaConf.register_new_resolver(
            "tag", lambda prefix, value: "" if value is None else f"{prefix}{value}"
        )

    # `${slug:${model}}` -> the value as one safe folder-name part (`sweep/naming.py`).
    if not OmegaConf.has_resolver("slug"):
        from libreyolo.config.slug import slug

        OmegaConf.register_new_resolver("slug", slug)

    def writable(node: DictConfig) -> DictConfig:
        OmegaConf.set_readonly(node, None)
        for key in node:
            child = node._get_node(key)
            if isinstance(child, DictConfig):
                writable(child)
        return node

    store = ConfigStore.instance()
    for name, schema in SCHEMAS.items():
        node = writable(OmegaConf.structured(schema))
        for key in UNSET_IN_STORE.get(name, ()):
            OmegaConf.update(node, key, "???")
        store.store(group=SCHEMA_GROUP, name=name, node=node)
