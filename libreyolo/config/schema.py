"""Typed config schema: frozen dataclasses for a profile run, registered in Hydra's ConfigStore.

Role: the one description of what `libreyolo profile run|infer` (and `libreyolo-sweep`) accept.
Packaged YAML in `libreyolo/conf/` pulls these schemas into each option's defaults list, so a typo
or a wrong type fails at composition. Names of models and datasets are plain strings resolved
later by the workload registry; no `_target_` here.

Must not: import torch or anything from the measuring layers, or hand `DictConfig` objects out
(`register_schemas` is the only function touching Hydra, and it returns nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from libreyolo.document.mode import Mode

SCHEMA_GROUP = "schema"

# The batch and window each mode's file (conf/mode/run.yaml, conf/mode/infer.yaml) sets, and so
# the defaults of `libreyolo profile run|infer` and of the collectors' settings. The schema's own
# fields carry the training values (`batch`, `warmup`, `steps`) and inference's `runs`.
RUN_BATCH = 16
RUN_WARMUP = 5
RUN_STEPS = 20
INFER_BATCH = 1
INFER_WARMUP = 20
INFER_RUNS = 100
# 0: the model's own input size (YOLOv9 640; YOLOX 416 for n/t, 640 for s and larger).
INFER_IMGSZ = 0


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


@dataclass(frozen=True)
class ModelConfig:
    """Which network: a registry family, its size variant (when given) and a weights file or
    name."""

    family: str = "yolo9"
    # None: the checkpoint's own size, else the weights name's, else the family's default (t).
    # A size given here (--size) must match the checkpoint: a default never overrides a file.
    size: str | None = None
    weights: str = "LibreYOLO9t.pt"
    fuse: str = "full"  # infer: full (BN folded, RepConvN merged, channels-last), bn, none


@dataclass(frozen=True)
class DatasetConfig:
    """Training data: a registry name (`synthetic`, `coco128`) or a dataset YAML path."""

    name_or_path: str = "synthetic"
    workers: int = 8
    cache: bool = False  # decode and resize every image once, before the window (RAM)


@dataclass(frozen=True)
class DeviceConfig:
    """Where to measure: a CUDA index ("0"), "cpu" or a torch device string ("cuda:1")."""

    name: str = "0"


@dataclass(frozen=True)
class WindowConfig:
    """The measurement window: warmup, measured training steps, measured inference runs, repeats."""

    warmup: int = RUN_WARMUP
    steps: int = RUN_STEPS
    runs: int = INFER_RUNS
    repeat: int = 1


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


@dataclass(frozen=True)
class ProfileConfig:
    """One resolved profile run. `batch` -1 means auto-fit (training on CUDA only)."""

    mode: ModeOption = ModeOption.run
    model: ModelConfig = field(default_factory=ModelConfig)
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    device: DeviceConfig = field(default_factory=DeviceConfig)
    window: WindowConfig = field(default_factory=WindowConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    batch: int = RUN_BATCH
    imgsz: int = 640
    amp: bool = True
    half: bool = False
    amp_dtype: AmpDtype = AmpDtype.float16
    conf: float = 0.25
    iou: float = 0.45
    max_det: int = 300
    trace: bool = True
    include_decode: bool = False  # infer: decode image files inside the window, not once before
    source: str | None = None
    project: str = "runs/profile"
    threads: int | None = None  # torch's intra-op CPU threads (None: torch's own default)


# Keys left unset (`???`) in the stored schemas although the Python classes have defaults: the
# packaged defaults list always picks a dataset option, and `dataset=custom` must then demand a
# path (merging `???` onto a value would silently keep the value).
UNSET_IN_STORE: dict[str, tuple[str, ...]] = {
    "root": ("dataset.name_or_path",),
    "dataset": ("name_or_path",),
}

# ConfigStore names under the `schema/` group (kept apart from real options, hydra-notes §3.4).
SCHEMAS: dict[str, type[Any]] = {
    "root": ProfileConfig,
    "model": ModelConfig,
    "dataset": DatasetConfig,
    "device": DeviceConfig,
    "window": WindowConfig,
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
