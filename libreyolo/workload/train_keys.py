"""libreyolo 1.6.0's training keys as the built-in step takes them: parsed, checked, resolved.

Role: the one place that knows which of 1.6.0's `libreyolo train` keys change the work of one
training step (`HONOURED`: the augmentation rates and ranges, the optimizer and its settings,
the EMA, YOLOv9's `max_labels` and `aux_weight`), which change nothing a step does
(`NO_STEP_EFFECT`: epochs, the lr schedule, validation, where files go), which `profile run`
sets with its own flags (`FLAG_KEYS`), and which the built-in step cannot do (everything else
1.6.0 knows: accepted only at the family's default). `parse_word` reads a `key=value` word as
1.6.0's CLI does (its aliases `mosaic`, `mixup`, `fliplr`); `resolve` merges what the user set,
the training config a checkpoint carries and the family's 1.6.0 defaults (`v16_train_config`)
into `TrainKeys`, with what it adopted and what it left out, in words.

Must not: import torch, read files, or build anything (a bad value is one UsageError line).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from libreyolo import defaults
from libreyolo.errors import UsageError
from libreyolo.workload import v16_train_config

# 1.6.0's per-family defaults (a family without its own table trains with YOLOv9's keys).
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "yolo9": v16_train_config.YOLO9,
    "yolox": v16_train_config.YOLOX,
}
# 1.6.0's CLI spellings of config fields (cli/aliases.py, training/config.py).
ALIASES = {"mosaic": "mosaic_prob", "mixup": "mixup_prob", "fliplr": "flip_prob"}
# Keys 1.6.0's CLI takes that are not config fields (`val=false` is `eval_interval=0`).
CLI_ONLY = frozenset({"pretrained", "val", "lr_drop", "task"})
# Keys `profile run` sets with its own flags, for 1.x's trainer too: a word would fight the flag.
TRAINER_FLAG_KEYS = {
    "data": "DATA",
    "model": "--weights",
    "batch": "--batch",
    "imgsz": "--imgsz",
    "device": "--device",
    "workers": "--workers",
    "amp": "--amp / --no-amp",
    "cache": "--cache",
    "max_labels": "--max-labels",
}
# The built-in step's: also the size and how it runs (1.x's trainer takes `compile=` itself).
FLAG_KEYS = {
    **TRAINER_FLAG_KEYS,
    "data_dir": "DATA",
    "size": "--size",
    "compile": "--exec compile",
}
# Keys whose value changes nothing one step does: the run's length and schedule, validation,
# checkpoints and logs, sampling over an epoch, DDP-only settings on one device.
NO_STEP_EFFECT = frozenset(
    {
        "num_classes", "epochs", "scheduler", "warmup_epochs", "warmup_lr_start",
        "warmup_momentum", "no_aug_epochs", "min_lr_ratio", "lr_drop", "project", "name",
        "exist_ok", "save_period", "eval_interval", "val", "max_det", "eval_max_det",
        "faster_coco_eval", "save_plots", "plot_samples", "val_loss", "patience",
        "log_interval", "seed", "resume", "pretrained", "allow_download_scripts", "profile",
        "profile_then_stop", "profile_warmup", "profile_steps", "profile_trace", "profile_open",
        "average_best", "export_check", "precise_bn", "sync_bn", "min_samples",
        "class_balanced", "task",
    }
)  # fmt: skip


def _probability(value: float) -> str | None:
    return None if 0.0 <= value <= 1.0 else "must be within [0, 1]"


def _non_negative(value: float) -> str | None:
    return None if value >= 0 else "must not be negative"


def _positive(value: float) -> str | None:
    return None if value > 0 else "must be more than 0"


def _fraction(value: float) -> str | None:
    return None if 0.0 <= value < 1.0 else "must be within [0, 1)"


def _open_unit(value: float) -> str | None:
    return None if 0.0 < value < 1.0 else "must be within (0, 1)"


def _translate(value: float) -> str | None:
    return None if 0.0 <= value <= 0.5 else "must be within [0, 0.5]"


def _degrees(value: float) -> str | None:
    return None if 0.0 <= value <= 180.0 else "must be within [0, 180]"


def _range(value: tuple[float, float]) -> str | None:
    return None if 0.0 < value[0] <= value[1] else "must be LO,HI with 0 < LO <= HI"


def _optimizer(value: str) -> str | None:
    return None if value in OPTIMIZERS else f"must be one of {', '.join(OPTIMIZERS)}"


def _max_labels(value: int) -> str | None:
    return None if value >= 1 else "must be 1 or more"


OPTIMIZERS = defaults.OPTIMIZERS  # 1.6.0's `_setup_optimizer` knows these three

# The keys that change a step's work, each with its check (the type is the default's).
HONOURED: dict[str, Callable[[Any], str | None]] = {
    "mosaic_prob": _probability,
    "mixup_prob": _probability,
    "hsv_prob": _probability,
    "flip_prob": _probability,
    "degrees": _degrees,
    "translate": _translate,
    "shear": _degrees,
    "mosaic_scale": _range,
    "mixup_scale": _range,
    "optimizer": _optimizer,
    "lr0": _positive,
    "momentum": _fraction,
    "weight_decay": _non_negative,
    "nesterov": lambda value: None,
    "ema": lambda value: None,
    "ema_decay": _open_unit,
    "max_labels": _max_labels,
    "aux_weight": _non_negative,
}


class _NotBuiltIn(UsageError):
    """A valid 1.6.0 setting the built-in step does not implement."""


@dataclass(frozen=True, slots=True)
class TrainKeys:
    """The 1.6.0 keys one built-in step runs with (names and meanings as 1.6.0's config)."""

    mosaic_prob: float
    mixup_prob: float
    hsv_prob: float
    flip_prob: float
    degrees: float
    translate: float
    shear: float
    mosaic_scale: tuple[float, float]
    mixup_scale: tuple[float, float]
    optimizer: str
    lr0: float
    momentum: float
    weight_decay: float
    nesterov: bool
    ema: bool
    ema_decay: float
    max_labels: int | None  # YOLOv9's target rows per image; None where the family has none
    aux_weight: float | None  # YOLOv9's PGI aux head loss weight (0: no aux branch); else None
    no_aug_phase: bool = False  # ours: a step of 1.6.0's last `no_aug_epochs` (mosaic off)

    def update_settings(self) -> dict[str, Any]:
        """The optimizer and EMA keys as a family's step takes them (`TrainStep` and
        `YOLOXTrainStep` keyword arguments)."""
        return {
            "optimizer": self.optimizer,
            "lr0": self.lr0,
            "momentum": self.momentum,
            "weight_decay": self.weight_decay,
            "nesterov": self.nesterov,
            "ema_decay": self.ema_decay,
        }

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready values (pairs as lists), in field order."""
        return {
            f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
            for f in fields(self)
        }


def family_keys(family: str) -> TrainKeys:
    """1.6.0's defaults of the honoured keys for `family` (YOLOv9's for a family it lacks)."""
    return resolve(family).keys


@dataclass(frozen=True, slots=True)
class Resolved:
    """The keys a run uses, the ones it took from a checkpoint (differing from the family's
    defaults) and notes for what it did not take."""

    keys: TrainKeys
    adopted: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def canonical(key: str) -> str:
    """The config field a 1.6.0 CLI key names (`mosaic` -> `mosaic_prob`)."""
    return ALIASES.get(key, key)


def known_keys(family: str) -> frozenset[str]:
    """Every key 1.6.0's `libreyolo train` takes for `family`, aliases included."""
    return frozenset(_defaults(family)) | frozenset(ALIASES) | CLI_ONLY


def parse_word(word: str, family: str) -> tuple[str, Any]:
    """(config field, typed value) of one `key=value` word, checked (UsageError, one line)."""
    key, sep, text = word.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(f"--train-arg {word!r}: must be KEY=VALUE, e.g. mosaic=0.0")
    name = _check_known(key, family)
    return name, _checked(name, _parse_text(name, text.strip(), family), family, "--train-arg ")


def resolve(
    family: str,
    user: Mapping[str, Any] | None = None,
    checkpoint: Mapping[str, Any] | None = None,
    *,
    no_aug_phase: bool = False,
    source: str = "the checkpoint",
) -> Resolved:
    """The keys of one run: `user`'s (config fields, values typed and checked by the caller
    or here), then the checkpoint's training config for those the user left, then the family's
    1.6.0 defaults. A checkpoint value that is not a valid one is a UsageError naming
    `source`; a key the built-in step cannot honour at its checkpoint value, and a flag key
    that differs, become notes."""
    defaults = _defaults(family)
    values = {name: _typed(name, defaults[name], family) for name in HONOURED if name in defaults}
    adopted: dict[str, Any] = {}
    notes: list[str] = []
    user = dict(user or {})
    for name, raw in (checkpoint or {}).items():
        if not isinstance(name, str) or name not in defaults or name in user:
            continue  # keys of another release are left out, as 1.6.0's resume does
        if name in NO_STEP_EFFECT or (name in FLAG_KEYS and name not in HONOURED):
            continue  # a flag's key (batch, imgsz) is the run's own; `max_labels` is adopted
        try:
            where = f"{source}: its training config's "
            value = _checked(name, _coerce(name, raw, family, where), family, where)
        except _NotBuiltIn:
            notes.append(
                f"{source} trained with {name}={show_value(raw)}, which the built-in step does not "
                "do (measure libreyolo train itself with --trainer)"
            )
            continue
        if name in HONOURED and value != values[name]:
            values[name] = adopted[name] = value
    ignored = []
    for name, raw in user.items():
        value = _checked(name, _coerce(name, raw, family, ""), family, "")
        if name in HONOURED:
            values[name] = value
        else:
            ignored.append(f"{name}={show_value(value)}")
    if ignored:
        notes.append(f"no effect on one training step, so not measured: {', '.join(ignored)}")
    for name in HONOURED:
        values.setdefault(name, None)  # a key the family does not have (YOLOX's max_labels)
    for name in ("mosaic_scale", "mixup_scale"):
        values[name] = tuple(values[name])
    return Resolved(TrainKeys(**values, no_aug_phase=no_aug_phase), adopted, notes)


def _check_user_key(name: str) -> None:
    """UsageError unless `name` (a config field) may be set for the built-in step."""
    if name in FLAG_KEYS:
        raise UsageError(
            f"--train-arg {name}=...: profile run sets {name} with {FLAG_KEYS[name]}",
            hint=f"use {FLAG_KEYS[name]}",
        )


def _defaults(family: str) -> dict[str, Any]:
    return FAMILY_DEFAULTS.get(family, v16_train_config.YOLO9)


def _check_known(key: str, family: str) -> str:
    name = canonical(key)
    if name in known_keys(family):
        _check_user_key(name)
        return name
    close = difflib.get_close_matches(key, sorted(known_keys(family)), n=1)
    raise UsageError(
        f"--train-arg {key}=...: not a libreyolo 1.6.0 training key for {family}",
        hint=f"did you mean {close[0]}?" if close else "see `libreyolo train --help` in 1.6.0",
    )


def _parse_text(name: str, text: str, family: str) -> Any:
    """A word's text in the type of the key's 1.6.0 default (pairs as `LO,HI`)."""
    default = _defaults(family).get(name)
    lowered = text.lower()
    if lowered in ("none", "null", ""):
        return None
    if isinstance(default, bool) or name in ("pretrained", "val"):
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise UsageError(f"--train-arg {name}={text}: must be true or false")
    if isinstance(default, list):
        parts = [p for p in text.strip("[]()").split(",") if p.strip()]
        try:
            return [float(p) for p in parts]
        except ValueError:
            raise UsageError(f"--train-arg {name}={text}: must be numbers LO,HI") from None
    if isinstance(default, int):
        try:
            return int(text)
        except ValueError:
            pass
    if isinstance(default, (int, float)):
        try:
            return float(text)
        except ValueError:
            raise UsageError(f"--train-arg {name}={text}: must be a number") from None
    return text


def _coerce(name: str, raw: Any, family: str, source: str) -> Any:
    """A value from a typed source (config, checkpoint) in the honoured key's type."""
    if name not in HONOURED:
        return raw
    default = _defaults(family).get(name)
    bad = UsageError(f"{source}{name}={show_value(raw)}: not a valid value")
    if isinstance(default, bool):
        if isinstance(raw, bool):
            return raw
        raise bad
    if isinstance(default, list):
        if isinstance(raw, (list, tuple)) and len(raw) == 2 and all(_is_number(v) for v in raw):
            return (float(raw[0]), float(raw[1]))
        raise bad
    if isinstance(default, str):
        if isinstance(raw, str):
            return raw.lower()
        raise bad
    if name == "max_labels":
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, float) and raw.is_integer():
            return int(raw)
        raise bad
    if _is_number(raw):
        return float(raw)
    raise bad


def _checked(name: str, value: Any, family: str, where: str) -> Any:
    """`value` if the built-in step can run key `name` with it, else UsageError."""
    default = _defaults(family).get(name)
    if name in HONOURED:
        if isinstance(value, list):
            value = tuple(value)
        if value is None:
            raise UsageError(f"{where}{name} needs a value")
        value = _coerce(name, value, family, where)
        problem = HONOURED[name](value)
        if problem:
            raise UsageError(f"{where}{name}={show_value(value)}: {problem}")
        if name == "mixup_prob" and value > 0 and family != "yolox":
            raise _NotBuiltIn(
                f"{where}mixup_prob={show_value(value)}: the built-in {family} step has no MixUp",
                hint="measure libreyolo train itself with --trainer",
            )
        return value
    if name in NO_STEP_EFFECT or name in CLI_ONLY:
        return value
    if _normal(value) != _normal(default):
        raise _NotBuiltIn(
            f"{where}{name}={show_value(value)}: the built-in step does not implement {name} "
            f"(1.6.0's default for {family}: {show_value(default)})",
            hint="measure libreyolo train itself with --trainer",
        )
    return value


def _typed(name: str, default: Any, family: str) -> Any:
    return _coerce(name, default, family, "1.6.0's default ")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _normal(value: Any) -> Any:
    """Comparable form: pairs as tuples, integral floats as ints."""
    if isinstance(value, (list, tuple)):
        return tuple(_normal(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def show_value(value: Any) -> str:
    """A value as 1.6.0's CLI words spell it (pairs `LO,HI`, booleans true/false)."""
    if isinstance(value, (list, tuple)):
        return ",".join(show_value(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def words_of(values: Mapping[str, Any]) -> list[str]:
    """`key=value` words for 1.6.0's `libreyolo train` (pairs as `LO,HI`)."""
    return [f"{name}={show_value(value)}" for name, value in values.items()]


def parse_words(words: Iterable[str], family: str) -> dict[str, Any]:
    """The config fields and values of `--train-arg` words; the same key twice with different
    values is a UsageError, as 1.6.0's alias conflict is."""
    found: dict[str, Any] = {}
    for word in words:
        name, value = parse_word(word, family)
        if name in found and _normal(found[name]) != _normal(value):
            twice = f"{show_value(found[name])} and {show_value(value)}"
            raise UsageError(f"--train-arg: {name} given twice ({twice})")
        found[name] = value
    return found
