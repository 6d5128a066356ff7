"""Collectors: run the workload under torch.profiler and return a finished Profile.

Role: `profile_inference` (`libreyolo profile infer`) and `profile_training` (`libreyolo
profile run`) measure one window of a `ProfileConfig`, write `profile.json` and
`profile_trace.json` into a fresh run directory and return the document. Must not: print, exit,
or decide verdicts (analysis does); errors are raised as `ProfileError` subclasses for the CLI
to map.

Importing this package imports no torch: the entry points load their modules on first call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from libreyolo.config.schema import ProfileConfig
    from libreyolo.document.model import Profile

__all__ = ["profile_inference", "profile_training"]


def profile_inference(cfg: ProfileConfig, **kwargs: Any) -> tuple[Profile, Path]:
    """See `libreyolo.measure.infer.profile_inference`."""
    from libreyolo.measure.infer import profile_inference as run

    return run(cfg, **kwargs)


def profile_training(cfg: ProfileConfig, **kwargs: Any) -> tuple[Profile, Path]:
    """See `libreyolo.measure.train.profile_training`."""
    from libreyolo.measure.train import profile_training as run

    return run(cfg, **kwargs)
