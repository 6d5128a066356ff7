"""Compose a typed `ProfileConfig` through Hydra's Compose API, not `@hydra.main`, so the CLI
keeps its own stdout, logging and exit statuses.

Role: the front door of configuration for single runs. Packaged defaults come from
`pkg://libreyolo.conf`; `config_dir` adds a user's directory (its group options, and its
primary configs when `config_name` names a file there; a `group/name` file there that declares
`# @package _global_`, an experiment such as a tune search's `tuned.yaml`, is added on top of
the packaged primary, as `libreyolo-sweep +group=name` adds it). Hydra and OmegaConf errors become
`ConfigError` with one line naming the offending key (and its flag, when it has one). A user's
YAML files are parsed first, on their own: one that does not parse, or whose aliases expand to
more than MAX_CONFIG_NODES values (a "billion laughs" takes minutes and gigabytes inside
OmegaConf), is refused in one line before Hydra reads it.

Must not: change the working directory, touch logging, print, exit, or let a `DictConfig`
leave this package (callers get frozen dataclasses and plain dicts).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from enum import Enum
from pathlib import Path
from typing import Any

from libreyolo.bounded_yaml import yaml_problem
from libreyolo.config.overrides import flag_for_key, override_keys
from libreyolo.config.schema import (
    AmpDtype,
    DatasetConfig,
    DeviceConfig,
    ExecConfig,
    ExecMode,
    ModelConfig,
    ModeOption,
    ProfileConfig,
    SweepConfig,
    TrainKeysConfig,
    TuneConfig,
    TuneGoal,
    WindowConfig,
    register_schemas,
)
from libreyolo.document.json_value import JsonObject
from libreyolo.errors import UsageError

PACKAGED_MODULE = "libreyolo.conf"
PACKAGED_SEARCHPATH = "pkg://libreyolo.conf"
VERSION_BASE = "1.3"
MAX_CONFIG_NODES = 100_000  # YAML nodes one config file may hold, aliases expanded
_GLOBAL_PACKAGE = re.compile(r"#\s*@package\s+_global_\s*$")
MAX_CONFIG_FILES = 1000  # files checked under --config-dir


class ConfigError(UsageError):
    """A config that cannot be composed: unknown key, wrong type, unknown option, bad override."""

    code = "bad_config"


def compose_config(
    overrides: Sequence[str] = (),
    *,
    config_dir: str | Path | None = None,
    config_name: str = "profile",
) -> ProfileConfig:
    """Compose `config_name` with `overrides` and return the frozen, validated config.

    Without `config_dir` the primary config is packaged. With it, a `config_name` file in
    `config_dir` is the primary config (packaged configs stay reachable, e.g. `- profile` in
    its defaults); otherwise the packaged primary is used and `config_dir` only adds options.
    A packaged compose is kept per machine (`compose_cache`): the same flags are not composed
    again.
    """
    from libreyolo.config.compose_cache import cacheable, cached_config, config_key, store_config

    checkable = config_dir is None and cacheable(overrides)
    key = config_key(overrides, config_name) if checkable else None
    cached = None if key is None else cached_config(key, overrides)
    if cached is not None:
        return cached
    result = _composed(overrides, config_dir, config_name)
    if key is not None:
        store_config(key, result)
    return result


def _composed(
    overrides: Sequence[str], config_dir: str | Path | None, config_name: str
) -> ProfileConfig:
    import yaml
    from hydra import compose, initialize_config_dir, initialize_config_module
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    register_schemas()
    overrides = list(overrides)
    extra: list[str] = []
    user_primary = False
    if config_dir is not None:
        directory = Path(config_dir).resolve()
        if not directory.is_dir():
            raise ConfigError(
                f"config directory not found: {config_dir}", hint="--config-dir takes a folder"
            )
        check_config_files(directory)
        path = directory / f"{config_name}.yaml"
        experiment = _experiment(path, config_name) if path.is_file() else None
        user_primary = path.is_file() and experiment is None
        searchpath = PACKAGED_SEARCHPATH if user_primary else directory.as_uri()
        extra = [f"hydra.searchpath=[{searchpath}]", *([experiment] if experiment else [])]
        config_name = "profile" if experiment else config_name
    context: AbstractContextManager[object]
    try:
        if user_primary:
            context = initialize_config_dir(
                str(directory), version_base=VERSION_BASE, job_name="libreyolo"
            )
        else:
            context = initialize_config_module(
                PACKAGED_MODULE, version_base=VERSION_BASE, job_name="libreyolo"
            )
        with context:
            cfg = compose(config_name, overrides=[*extra, *overrides])
        result = OmegaConf.to_object(cfg)
    except (HydraException, OmegaConfBaseException) as err:
        raise ConfigError(describe_error(err, overrides), hint=_hint(err)) from err
    except yaml.YAMLError as err:  # a file the pre-check did not see (a packaged one)
        raise ConfigError(f"config: not valid YAML: {yaml_problem(err)}") from err
    if not isinstance(result, ProfileConfig):
        raise ConfigError(
            f"config '{config_name}' is not a profile config (got {type(result).__name__})",
            hint="start its defaults list with `- profile`",
        )
    return result


def _experiment(path: Path, config_name: str) -> str | None:
    """`+group=name` when the file `path` (`config_name` = `group/name`) is an experiment: its
    header comment declares `# @package _global_`; None for a primary config."""
    if "/" not in config_name:
        return None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith("#"):
            break
        if _GLOBAL_PACKAGE.match(line):
            group, name = config_name.rsplit("/", 1)
            return f"+{group}={name}"
    return None


def check_config_files(directory: Path, *, max_nodes: int | None = None) -> None:
    """ConfigError (one line) for a YAML file under `directory` that does not parse or whose
    aliases expand to more than `max_nodes` (default MAX_CONFIG_NODES) nodes; counted on the
    parsed node graph, never expanded."""
    from libreyolo.bounded_yaml import check_yaml_bounded

    max_nodes = MAX_CONFIG_NODES if max_nodes is None else max_nodes
    for path in sorted(itertools.islice(directory.rglob("*.yaml"), MAX_CONFIG_FILES)):
        check_yaml_bounded(path, error=ConfigError, max_nodes=max_nodes)


def describe_error(err: BaseException, overrides: Sequence[str] = ()) -> str:
    """One line naming the offending key (and flag) for a Hydra/OmegaConf error."""
    from hydra.errors import MissingConfigException, OverrideParseException

    if isinstance(err, MissingConfigException):
        missing = err.missing_cfg_file or ""
        if "/" in missing and err.options is not None:
            group, _, option = missing.rpartition("/")
            choices = ", ".join(sorted(err.options)) or "none"
            return f"{group}: no option '{option}' (choose one of: {choices})"
        return f"config: cannot find config '{missing}'"
    if isinstance(err, OverrideParseException):
        bad = _unparsable_override(overrides)
        if bad is not None:
            return f"{_name(bad.split('=', 1)[0])}: cannot parse override '{bad}'"
        return f"override: {_first_line(err)}"
    key = _full_key(err)
    detail = _first_line(_deepest_omegaconf(err) or err)
    if key is None:
        key = next((k for k in override_keys(overrides) if f"'{k}" in str(err)), None)
    return f"{_name(key)}: {detail}" if key else f"config: {detail}"


def as_plain_dict(cfg: ProfileConfig) -> JsonObject:
    """The resolved config as JSON-ready data (enums as their values), for a profile document."""
    return _plain(dataclasses.asdict(cfg))


_NESTED: dict[str, type[Any]] = {
    "model": ModelConfig,
    "dataset": DatasetConfig,
    "device": DeviceConfig,
    "window": WindowConfig,
    "exec": ExecConfig,
    "sweep": SweepConfig,
    "tune": TuneConfig,
    "train": TrainKeysConfig,
}


def config_from_dict(data: JsonObject) -> ProfileConfig:
    """Rebuild the frozen `ProfileConfig` from `as_plain_dict` output."""
    kwargs: dict[str, object] = {}
    for key, value in data.items():
        nested = _NESTED.get(key)
        kwargs[key] = nested(**value) if nested is not None and isinstance(value, dict) else value
    kwargs["mode"] = ModeOption(str(data.get("mode", ModeOption.run.value)))
    kwargs["amp_dtype"] = AmpDtype(str(data.get("amp_dtype", AmpDtype.float16.value)))
    execution = kwargs.get("exec")
    if isinstance(execution, ExecConfig):
        kwargs["exec"] = dataclasses.replace(execution, name=ExecMode(str(execution.name)))
    tune = kwargs.get("tune")
    if isinstance(tune, TuneConfig):
        kwargs["tune"] = dataclasses.replace(tune, goal=TuneGoal(str(tune.goal)))
    return ProfileConfig(**kwargs)  # type: ignore[arg-type]  # as_plain_dict's own keys


def config_yaml(cfg: ProfileConfig) -> str:
    """The resolved config as YAML text (for `--print-config`)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_yaml(OmegaConf.create(as_plain_dict(cfg)))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, Enum):
        return value.value
    return value


def _name(key: str | None) -> str:
    if not key:
        return "config"
    flag = flag_for_key(key)
    return f"{key} ({flag})" if flag else key


def _full_key(err: BaseException) -> str | None:
    node: BaseException | None = err
    while node is not None:
        key = getattr(node, "full_key", None)
        if key:
            return str(key)
        node = node.__cause__ or node.__context__
    return None


def _deepest_omegaconf(err: BaseException) -> BaseException | None:
    from omegaconf.errors import OmegaConfBaseException

    found: BaseException | None = None
    node: BaseException | None = err
    while node is not None:
        if isinstance(node, OmegaConfBaseException):
            found = node
        node = node.__cause__
    return found


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    line = text.splitlines()[0] if text else type(err).__name__
    return re.sub(r"\s+", " ", line)


def _unparsable_override(overrides: Sequence[str]) -> str | None:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    for text in overrides:
        try:
            parser.parse_override(text)
        except HydraException:
            return text
    return None


def _hint(err: BaseException) -> str | None:
    from hydra.errors import MissingConfigException

    if isinstance(err, MissingConfigException):
        return "see the packaged options with `libreyolo-sweep --help`"
    return None
