"""`run` and `infer`: flags -> Hydra-composed config -> collector -> outcome.

Imported only by those two commands: it pulls in Hydra here and torch in the collectors.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from libreyolo.analysis.outcome import ConfigView, MeasurementOutcome, outcome
from libreyolo.cli.invoked import invoked_as
from libreyolo.cli.parser import typed_dests
from libreyolo.config.compose import ConfigError, as_plain_dict, compose_config, config_yaml
from libreyolo.config.overrides import to_overrides
from libreyolo.config.schema import ProfileConfig
from libreyolo.measure.artifacts import set_dir
from libreyolo.measure.from_config import measure_config


def _typed(args: argparse.Namespace) -> set[str]:
    """The dests of the flags the user typed (and positionals given), not argparse defaults:
    argparse's own reading of the words (`typed_dests`), so no spelling of a flag is missed."""
    return typed_dests(list(args.words))


def _compose(args: argparse.Namespace, mode: str) -> tuple[ProfileConfig, list[str]]:
    # With an experiment file, only typed flags override it: argparse defaults must not.
    only = _typed(args) if args.config else None
    overrides = to_overrides(vars(args), mode=None if args.config else mode, only=only)
    cfg = compose_config(
        overrides, config_dir=args.config_dir, config_name=args.config or "profile"
    )
    if cfg.mode.value != mode:  # the file chose the other mode (or left run's default)
        raise ConfigError(
            f"--config {args.config} composes mode {cfg.mode.value}, not {mode}: measure it "
            f"with 'libreyolo profile {cfg.mode.value}', or give the file mode {mode}",
            hint=f"its defaults list chooses the mode: override mode: {mode}",
        )
    return cfg, overrides


def measure(
    args: argparse.Namespace, mode: str, progress: Callable[..., None] | None
) -> MeasurementOutcome | ConfigView | None:
    """Compose, measure `--repeat` trials, write the profile(s) and return the outcome; None
    on a rank other than 0 of a world torchrun started (rank 0 prints the world's)."""
    from libreyolo.measure.world import joined_world

    cfg, overrides = _compose(args, mode)
    if args.print_config:
        return ConfigView(as_plain_dict(cfg), config_yaml(cfg))
    profile, path = measure_config(cfg, overrides, progress, notice=args.notice)
    joined = joined_world()
    if joined is not None and joined.rank != 0:
        return None
    trace = profile.artifacts.trace
    # In the set, also for the --repeat aggregate, whose path is its link beside the set.
    trace_path = str(set_dir(cfg.project, cfg.mode.value) / trace) if trace else None
    return outcome(profile, str(path), trace_path, invoked_as())
