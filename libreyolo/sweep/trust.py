"""What a sweep's config may make Hydra run before any code of ours does.

Role: when a run starts, Hydra instantiates every `_target_` under `hydra.callbacks` (any
importable callable, with the file's arguments: `builtins.open(file, mode="w")` empties a file,
`shutil.copyfile` drops a `sitecustomize.py`), instantiates the launcher and sweeper with
every `_target_` nested in their settings, and hands a `hydra.job_logging` or
`hydra.hydra_logging` whose root is set to `logging.config` (a `FileHandler` opens any path for
writing). A config file (`--config-dir`, `+experiment=...`) is therefore as trusted as code.
`check_sweep_config` composes the multirun's config the way `@hydra.main` will, before Hydra
does, and refuses (UsageError, one line, nothing run or written) any `_target_` under `hydra`
but the launcher's and the sweeper's own (Hydra takes those only from installed plug-ins), the
samplers the Optuna sweeper's own config groups name (`PLUGIN_NESTED`) and our callbacks (the
report; the opt-in MLflow and TensorBoard ones, at their packaged keys), unless the command
line names it with `--allow-target DOTTED.NAME`, and a logging config unless
`--allow-logging-config` is given. `split_trust_flags` takes those flags
off the command line before Hydra parses it.

Must not: run a job, create the sweep folder, instantiate anything, or keep Hydra initialised.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from libreyolo.errors import UsageError

ALLOW_TARGET = "--allow-target"
ALLOW_LOGGING = "--allow-logging-config"
OURS = {
    "callbacks.sweep_report._target_": "libreyolo.sweep.app.SweepReportCallback",
    "callbacks.mlflow._target_": "libreyolo.sweep.tracking_callbacks.MlflowCallback",
    "callbacks.tensorboard._target_": "libreyolo.sweep.tracking_callbacks.TensorboardCallback",
}
PLUGIN_TARGETS = ("launcher._target_", "sweeper._target_")  # Hydra's plug-in registry decides
# What an installed sweeper plug-in's own config groups set nested in its settings: Optuna's
# samplers (`hydra/sweeper/sampler=tpe|random|cmaes|nsgaii|motpe|grid`), constructors only.
PLUGIN_NESTED = {
    "sweeper.sampler._target_": {
        "optuna.samplers.TPESampler",
        "optuna.samplers.RandomSampler",
        "optuna.samplers.CmaEsSampler",
        "optuna.samplers.NSGAIISampler",
        "optuna.samplers.MOTPESampler",
        "optuna.samplers.GridSampler",
    }
}
LOGGING = ("job_logging", "hydra_logging")
PRIMARY = ("pkg://libreyolo.conf", "profile")  # @hydra.main's config_path and config_name


@dataclass(frozen=True)
class Trust:
    """What the user opted into on the command line."""

    targets: frozenset[str] = field(default_factory=frozenset)
    logging: bool = False


def split_trust_flags(argv: Sequence[str]) -> tuple[Trust, list[str]]:
    """(the trust flags, the rest of `argv` for Hydra). UsageError for `--allow-target`
    without a name."""
    rest: list[str] = []
    targets: set[str] = set()
    logging = False
    words = iter(argv)
    for word in words:
        if word == ALLOW_LOGGING:
            logging = True
        elif word == ALLOW_TARGET or word.startswith(ALLOW_TARGET + "="):
            name = word.split("=", 1)[1] if "=" in word else next(words, "")
            if not name or name.startswith("-"):
                raise UsageError(f"{ALLOW_TARGET} needs a dotted name (e.g. mymod.MyCallback)")
            targets.add(name)
        else:
            rest.append(word)
    return Trust(frozenset(targets), logging), rest


def _targets(node: object, path: str = "") -> Iterator[tuple[str, object]]:
    """(`a.b._target_`, value) of every `_target_` in the plain container `node`."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}" if path else str(key)
            if key == "_target_":
                yield here, value
            else:
                yield from _targets(value, here)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _targets(value, f"{path}[{index}]")


def untrusted(hydra: Mapping[str, object], trust: Trust) -> UsageError | None:
    """The refusal for the first thing in the composed `hydra` settings (a plain container,
    unresolved) that would run code the user did not opt into; None when there is none."""
    for path, target in _targets(hydra):
        if (
            path in PLUGIN_TARGETS
            or OURS.get(path) == target
            or str(target) in PLUGIN_NESTED.get(path, set())
            or str(target) in trust.targets
        ):
            continue
        return UsageError(
            f"refusing to instantiate hydra.{path} = {target!s}: a config file's _target_ "
            "runs as code when the sweep starts",
            hint=f"if you trust it, add {ALLOW_TARGET} {target!s}",
        )
    for key in LOGGING:
        settings = hydra.get(key)
        if isinstance(settings, dict) and settings.get("root") is not None and not trust.logging:
            return UsageError(
                f"refusing hydra.{key}: a logging config can open any file for writing",
                hint=f"if you trust it, add {ALLOW_LOGGING}",
            )
    return None


def composed_hydra(argv: Sequence[str]) -> dict[str, object] | None:
    """The `hydra` settings `@hydra.main` composes for `argv` (unresolved), or None when this
    command line starts no run (`--help`, `--cfg`, `--info`, shell completion). A command line
    that does not compose is a ConfigError (one line, as for `libreyolo profile`): Hydra would
    refuse it too, and a check that gave up there would let the next version through."""
    import os

    from hydra._internal.hydra import Hydra
    from hydra._internal.utils import create_automatic_config_search_path, get_args_parser
    from hydra.core.config_search_path import SearchPathQuery
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    from libreyolo.config.compose import ConfigError, describe_error

    args = get_args_parser().parse_args(list(argv))
    if args.help or args.hydra_help or args.cfg or args.info or args.shell_completion:
        return None
    search_path = create_automatic_config_search_path(None, None, args.config_path or PRIMARY[0])
    if args.config_dir is not None:
        directory = os.path.abspath(args.config_dir)
        if not os.path.isdir(directory):
            raise ConfigError(f"config directory not found: {args.config_dir}")
        search_path.prepend("command-line", f"file://{directory}", SearchPathQuery("schema"))
    config_name = args.config_name or PRIMARY[1]
    try:
        hydra = Hydra.create_main_hydra2(
            task_name="libreyolo-sweep", config_search_path=search_path
        )
        mode = hydra.get_mode(config_name=config_name, overrides=args.overrides)
        multirun = args.multirun or mode == RunMode.MULTIRUN
        config = hydra.compose_config(
            config_name,
            args.overrides,
            run_mode=RunMode.MULTIRUN if multirun else RunMode.RUN,
            with_log_configuration=False,
        )
        plain = OmegaConf.to_container(config.hydra, resolve=False)
        _check_group_sweeps(hydra, args.overrides)
    except ConfigError:
        raise
    except Exception as err:  # Hydra's and OmegaConf's errors (and a schema's)
        raise ConfigError(describe_error(err, args.overrides)) from err
    finally:
        GlobalHydra.instance().clear()
    return {str(k): v for k, v in plain.items()} if isinstance(plain, dict) else None


def _check_group_sweeps(hydra: Any, overrides: Sequence[str]) -> None:
    """ConfigError for a config group swept over values that are no option names
    (`device=0,1`): Hydra composes the primary config without the sweep, then fails each job
    with a traceback."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from libreyolo.config.compose import ConfigError

    loader = hydra.config_loader
    for override in OverridesParser.create(config_loader=loader).parse_overrides(list(overrides)):
        group = override.key_or_group
        if not override.is_sweep_override() or not loader.repository.group_exists(group):
            continue
        names = [v for v in override.sweep_iterator() if not isinstance(v, str)]
        if names:
            options = ", ".join(sorted(loader.get_group_options(group))) or "none"
            raise ConfigError(
                f"{override.input_line}: {group} is a config group and {names[0]!r} is none "
                f"of its options (choose from: {options})"
            )


def check_sweep_config(argv: Sequence[str], trust: Trust) -> None:
    """UsageError when the run `argv` starts would instantiate or configure what `trust` does
    not allow (see the module docstring)."""
    hydra = composed_hydra(argv)
    refusal = None if hydra is None else untrusted(hydra, trust)
    if refusal is not None:
        raise refusal
