"""The model families this install can measure, and which of them a checkpoint file holds.

Role: the built-in families (YOLOv9, YOLOX) merged with the `libreyolo.workloads` entry-point
group, where a separate package adds its own (`name = "package.module:OBJECT"`, the object a
`workload.family.Workload`); each family's module is imported only when that family is asked
for, so one that fails to import costs only its own users a one-line error. `detect_file`
tells a file's family as 1.6.0 does: checkpoint metadata (`model_family`), then the file name
(each family's `claims_name`), then the keys (each family's `detect`).
Must not: load model weights, measure, print or exit, or import torch at import time (the
sweep's parent process reads the built-in list).
"""

from __future__ import annotations

import contextlib
import importlib
import os
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

from libreyolo.errors import CheckpointError, UsageError
from libreyolo.workload.family import Workload

GROUP = "libreyolo.workloads"
# Ours, usable without reinstalling the package (entry points are read from installed metadata).
BUILTIN: dict[str, str] = {
    "yolo9": "libreyolo.workload.yolo9.family:WORKLOAD",
    "yolox": "libreyolo.workload.yolox.family:WORKLOAD",
}
BUILTIN_MODULES: tuple[str, ...] = tuple(target.split(":")[0] for target in BUILTIN.values())
DEFAULT_FAMILY = "yolo9"


@cache
def _targets() -> dict[str, str]:
    """name -> "module:attribute"; a third-party entry point never replaces a built-in."""
    found = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    return found | BUILTIN


@cache
def family(name: str) -> Workload:
    """The family registered as `name`; UsageError listing the families when there is none."""
    target = _targets().get(name)
    if target is None:
        raise UsageError(f"no model family {name!r}", hint=f"the families here are: {_listing()}")
    try:
        obj = EntryPoint(name, target, GROUP).load()
    except Exception as exc:  # a broken plug-in is that family's problem only
        raise UsageError(
            f"model family {name!r} cannot be loaded from {target}: {type(exc).__name__}: {exc}"
        ) from None
    if not isinstance(obj, Workload):
        raise UsageError(f"model family {name!r} ({target}) is not a Workload")
    return obj


def families() -> dict[str, str]:
    """Every registered family name -> where it lives ("module:attribute"), sorted by name."""
    return dict(sorted(_targets().items()))


def clear_cache() -> None:
    """Forget the entry points and loaded families (after installing a package at run time)."""
    _targets.cache_clear()
    family.cache_clear()
    importlib.invalidate_caches()


def detect_file(path: str | os.PathLike[str]) -> tuple[Workload, str | None, int | None]:
    """(family, size, nc) of a checkpoint file; size and nc None when the file does not say.

    A family we do not implement, or a file no family claims, is one CheckpointError line
    naming what the file holds and the families we have."""
    from libreyolo.workload.checkpoint_io import read_checkpoint  # torch: only when asked

    path = Path(path)
    ckpt = read_checkpoint(path)
    meta = ckpt.get("model_family")
    if isinstance(meta, str):
        if meta not in _targets():
            raise CheckpointError(
                f"{path}: holds a {meta!r} model; libreyolo profile measures {_listing()}"
            )
        found = family(meta)
        sniffed = found.detect(ckpt) or (None, None)
        size = ckpt.get("size") if isinstance(ckpt.get("size"), str) else sniffed[0]
        nc = ckpt.get("nc") if isinstance(ckpt.get("nc"), int) else sniffed[1]
        return found, size, nc
    for candidate in _loadable():
        size = candidate.claims_name(path.stem)
        if size is not None:
            sniffed = candidate.detect(ckpt) or (None, None)
            return candidate, sniffed[0] or size, sniffed[1]
    for candidate in _loadable():
        claim = candidate.detect(ckpt)
        if claim is not None:
            return candidate, claim[0], claim[1]
    raise CheckpointError(
        f"{path}: no model family we know holds these weights; "
        f"libreyolo profile measures {_listing()}"
    )


def preload_builtins() -> None:
    """Import the built-in families that import (a sweep's fork server, before any clock)."""
    for name in BUILTIN:
        with contextlib.suppress(UsageError):
            family(name)


def _loadable() -> list[Workload]:
    """The families whose modules import, built-ins first (a broken one claims no files)."""
    out = []
    for name in sorted(_targets(), key=lambda n: (n not in BUILTIN, n)):
        try:
            out.append(family(name))
        except UsageError:
            continue
    return out


def _listing() -> str:
    return ", ".join(sorted(_targets()))
