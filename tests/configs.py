"""Typed configs for tests that call a collector directly: a mode's defaults with a few keys
changed, named as Hydra overrides name them (`window.warmup`, `device.name`, `batch`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from libreyolo.config.schema import ProfileConfig, mode_defaults


def with_keys(cfg: ProfileConfig, values: Mapping[str, Any]) -> ProfileConfig:
    """`cfg` with each dotted key of `values` set; an unknown key raises TypeError."""
    top: dict[str, Any] = {k: v for k, v in values.items() if "." not in k}
    for key, value in values.items():
        group, dot, name = key.partition(".")
        if dot:
            top[group] = dataclasses.replace(top.get(group, getattr(cfg, group)), **{name: value})
    return dataclasses.replace(cfg, **top)


def configured(mode: str, values: Mapping[str, Any] | None = None) -> ProfileConfig:
    """What `libreyolo profile <mode>` composes without flags, with `values` set."""
    return with_keys(mode_defaults(mode), values or {})
