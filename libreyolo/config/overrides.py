"""Flag values -> Hydra override strings, with every string value quoted.

Quoted because Hydra's override grammar reads an unquoted `a,b` as a sweep, fails on a second
`=`, and interpolates `${x}`; a single-quoted value with `'`, `${` and the backslashes before them
escaped reads back literally.

Role: the single translation from the POSIX front door's flag values (argparse `dest` names) to
override keys of the packaged config, so `libreyolo profile run --steps 20` and
`libreyolo-sweep window.steps=20` compose the same resolved config.

Must not: import hydra or omegaconf (this module is plain string work), build sweep lists
(multirun syntax belongs to `libreyolo-sweep` only), or read or change any state.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping
from enum import Enum

# argparse dest (the flag without dashes, `-` -> `_`) -> override key in the packaged config.
FLAG_KEYS: dict[str, str] = {
    "data": "dataset.name_or_path",
    "source": "source",
    "weights": "model.weights",
    "size": "model.size",
    "batch": "batch",
    "imgsz": "imgsz",
    "workers": "dataset.workers",
    "cache": "dataset.cache",
    "fuse": "model.fuse",
    "amp": "amp",
    "half": "half",
    "amp_dtype": "amp_dtype",
    "steps": "window.steps",
    "warmup": "window.warmup",
    "runs": "window.runs",
    "repeat": "window.repeat",
    "repeat_in_process": "window.repeat_in_process",
    "conf": "conf",
    "iou": "iou",
    "max_det": "max_det",
    "device": "device.name",
    "nproc": "device.nproc",
    "trace": "trace",
    "include_decode": "include_decode",
    "project": "project",
    "threads": "threads",
    "exec": "exec.name",
    "compile_mode": "exec.compile_mode",
    "channels_last": "exec.channels_last",
    "trainer": "trainer",
    "train_arg": "train_args",
    "trainer_timeout": "trainer_timeout_s",
    "max_labels": "max_labels",
    "variant": "variants",
    "mosaic": "train.mosaic_prob",
    "mixup": "train.mixup_prob",
    "optimizer": "train.optimizer",
    "ema": "train.ema",
    "no_aug_phase": "train.no_aug_phase",
    "checkpoint_config": "checkpoint_config",
}

# Flag values that are positional arguments, not options.
POSITIONALS: frozenset[str] = frozenset({"data", "source"})

# Backslash runs before a quote, before `${` or at the very end must be doubled; the quote
# and `${` themselves are escaped. Every other backslash is literal inside a quoted value.
_SPECIAL = re.compile(r"(\\*)('|\$\{|\Z)")

OverrideValue = str | bool | int | float | Enum | list[str] | None


def quote_value(text: str) -> str:
    """Return `text` as a single-quoted Hydra override value that Hydra reads back literally."""

    def escape(match: re.Match[str]) -> str:
        slashes, spot = match.group(1) * 2, match.group(2)
        return slashes + ("\\" + spot if spot else "")

    return "'" + _SPECIAL.sub(escape, text) + "'"


def render_value(value: OverrideValue) -> str:
    """One value in override syntax: null, true/false, numbers as is, every string quoted."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return quote_value(str(value.value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return quote_value(value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "[" + ",".join(quote_value(item) for item in value) + "]"
    raise TypeError(f"no override syntax for {type(value).__name__} value {value!r}")


def override(key: str, value: OverrideValue) -> str:
    """`key=<value>` with the value rendered by `render_value`."""
    return f"{key}={render_value(value)}"


def to_overrides(
    values: Mapping[str, object],
    *,
    mode: str | None = None,
    only: Collection[str] | None = None,
    skip_none: bool = True,
) -> list[str]:
    """Override strings for the flag values in `values` (argparse dests, e.g. `vars(args)`).

    Keys that are not config flags (`json`, `debug`, `handler`, ...) are ignored. `mode`
    ("run" or "infer") selects the mode group first, so later flags override its defaults.
    `only` restricts the translation to these dests (the flags a user typed), so an
    experiment file chosen with `--config` is not overwritten by argparse defaults.
    With `skip_none`, a None value (e.g. infer's omitted `source`) leaves the config's value.
    """
    found: list[str] = [f"mode={mode}"] if mode is not None else []
    for dest, key in FLAG_KEYS.items():
        if dest not in values or (only is not None and dest not in only):
            continue
        value = values[dest]
        if value is None and skip_none:
            continue
        found.append(override(key, _as_override_value(value)))
    return found


def flag_for_key(key: str) -> str | None:
    """The POSIX flag that sets override `key` (`--max-det`; `DATA` for a positional), or None."""
    for dest, flag_key in FLAG_KEYS.items():
        if flag_key == key:
            return dest.upper() if dest in POSITIONALS else "--" + dest.replace("_", "-")
    return None


def override_keys(overrides: Iterable[str]) -> list[str]:
    """The key of each override string (`+`, `++`, `~` prefixes dropped)."""
    return [text.split("=", 1)[0].lstrip("+~") for text in overrides]


def _as_override_value(value: object) -> OverrideValue:
    if value is None or isinstance(value, str | bool | int | float | Enum):
        return value
    if isinstance(value, list | tuple):  # a repeatable flag's values
        return [str(item) for item in value]
    # Anything else (a Path, say) is passed as its text.
    return str(value)
