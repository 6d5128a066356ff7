"""What a `profile run` asks of the built-in step beyond the model and data: checked, resolved.

Role: from the config, the run's variants and `max_labels` (checked), the 1.6.0 training keys
the user set (`train.*` fields and `train_args` words, one source per key), and, from a 1.6.0
checkpoint's own training config (unless `checkpoint_config` is off), the keys the user left:
one `TrainOptions` for the family's step and dataset, with the notes that say what was adopted
from the checkpoint and what it holds that this run does not measure.
Must not: build a model or a dataset, or decide anything a family decides (`train_keys`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from libreyolo import defaults
from libreyolo.config.schema import ProfileConfig
from libreyolo.errors import UsageError
from libreyolo.workload.family import TrainOptions
from libreyolo.workload.train_keys import Resolved, parse_words, resolve, show_value

# Keys `profile run` sets with its own flags, compared with the checkpoint's for a note.
_FLAG_NOTES = (("batch", "--batch"), ("imgsz", "--imgsz"))


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The options of the family's step and what resolving them found."""

    options: TrainOptions
    resolved: Resolved
    notes: list[str]


def check_variants(settings: ProfileConfig) -> None:
    """UsageError for an unknown `--variant` or a `--max-labels` below 1."""
    unknown = sorted(set(settings.variants) - set(defaults.TRAIN_VARIANTS))
    if unknown:
        raise UsageError(
            f"unknown variant {unknown[0]!r}",
            hint=f"one of: {', '.join(defaults.TRAIN_VARIANTS)}",
        )
    if settings.max_labels is not None and settings.max_labels < 1:
        raise UsageError(f"--max-labels must be 1 or more; got {settings.max_labels}")


def training_channels_last(settings: ProfileConfig) -> bool:
    """Whether the step runs NHWC: `--variant channels_last` or `--channels-last` (the same
    speed-up; 1.6.0 trains NCHW, the default)."""
    return settings.exec.channels_last is True or "channels_last" in settings.variants


def recorded_variants(settings: ProfileConfig) -> list[str]:
    """The speed-ups the run opted into, `--channels-last` as the variant it is."""
    nhwc = {"channels_last"} if training_channels_last(settings) else set()
    return sorted(set(settings.variants) | nhwc)


def user_keys(settings: ProfileConfig, family: str) -> dict[str, Any]:
    """The 1.6.0 keys the user set, as config fields: `train.*` then `train_args` words (a key
    in both is a UsageError: which one would be measured?), with `--max-labels`."""
    typed = settings.train.given()
    words = parse_words(settings.train_args, family)
    both = sorted(set(typed) & set(words))
    if both:
        raise UsageError(
            f"{both[0]} is set twice: train.{both[0]} (a flag or override) and --train-arg",
            hint="give it once",
        )
    found = {**typed, **words}
    if settings.max_labels is not None:
        found["max_labels"] = settings.max_labels
    return found


def run_options(
    settings: ProfileConfig,
    family: str,
    *,
    weights_path: str | os.PathLike[str] | None = None,
) -> RunOptions:
    """The step's options for `family`, the checkpoint at `weights_path` (a file, or None)
    adopted for the keys the user left unless `settings.checkpoint_config` is off."""
    check_variants(settings)
    user = user_keys(settings, family)
    checkpoint = None
    if weights_path is not None and settings.checkpoint_config:
        from libreyolo.workload.checkpoint_io import training_config

        checkpoint = training_config(weights_path)
    source = os.fspath(weights_path) if weights_path is not None else "the checkpoint"
    resolved = resolve(
        family,
        user,
        checkpoint,
        no_aug_phase=settings.train.no_aug_phase,
        source=source,
    )
    notes = list(resolved.notes)
    if resolved.adopted:
        taken = ", ".join(f"{k}={show_value(v)}" for k, v in resolved.adopted.items())
        notes.insert(
            0,
            f"adopted the training config {source} carries: {taken} "
            "(--no-checkpoint-config: 1.6.0's defaults, as `libreyolo train` without resume)",
        )
    if checkpoint is not None:
        notes += _flag_differences(settings, checkpoint, source)
    options = TrainOptions(settings.max_labels, frozenset(settings.variants), resolved.keys)
    return RunOptions(options, resolved, notes)


def _flag_differences(
    settings: ProfileConfig, checkpoint: dict[str, Any], source: str
) -> list[str]:
    """A note when the checkpoint trained at another batch or image size than the run's."""
    theirs = [(key, checkpoint.get(key), getattr(settings, key)) for key, _ in _FLAG_NOTES]
    differ = [(k, v, ours) for k, v, ours in theirs if isinstance(v, int) and v != ours]
    if not differ:
        return []
    trained = ", ".join(f"{k} {v}" for k, v, _ in differ)
    measured = ", ".join(f"{k} {ours}" for k, _, ours in differ)
    return [f"{source} trained at {trained}; this run measures {measured}, as its flags say"]
