"""Configuration: the typed schema, packaged Hydra configs and the Compose API front door.

Import this package only from commands that measure (`run`, `infer`) and from the sweep entry;
readers never import it (it pulls hydra and omegaconf when composing). Importing the package
itself is cheap: hydra is imported inside the functions that need it.
"""

from __future__ import annotations

from libreyolo.config.compose import ConfigError, as_plain_dict, compose_config, config_yaml
from libreyolo.config.overrides import FLAG_KEYS, override, quote_value, to_overrides
from libreyolo.config.schema import (
    AmpDtype,
    DatasetConfig,
    DeviceConfig,
    ModelConfig,
    ModeOption,
    ProfileConfig,
    WindowConfig,
    register_schemas,
)

__all__ = [
    "FLAG_KEYS",
    "AmpDtype",
    "ConfigError",
    "DatasetConfig",
    "DeviceConfig",
    "ModeOption",
    "ModelConfig",
    "ProfileConfig",
    "WindowConfig",
    "as_plain_dict",
    "compose_config",
    "config_yaml",
    "override",
    "quote_value",
    "register_schemas",
    "to_overrides",
]
