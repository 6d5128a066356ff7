"""The model families this install can measure, and which of them a checkpoint file holds.

Role: the built-in families (YOLOv9, YOLOX) merged with the `libreyolo.workloads` entry-point
group, where a separate package adds its own (`name = "package.module:OBJECT"`, the object a
`workload.family.Workload`); each family's module is imported only when that family is asked
for. `detect_file` tells a file's family as 1.6.0 does: checkpoint metadata (`model_family`),
then the file name (each family's `claims_name`), then the keys (each family's `detect`).
A broken plug-in is that plug-in's problem only: its import and each call into it are
contained (anything but KeyboardInterrupt, SystemExit included) and bounded in time, so while
detecting a file it is skipped with one warning, and only asking for it by name is an error.
Must not: load model weights, measure, print or exit, or import torch at import time (the
sweep's parent process reads the built-in list).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
import warnings
from collections.abc import Callable
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, TypeVar

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
# How long a plug-in's import, or one call into it, may take before it is abandoned and the
# family treated as unloadable: far above a real import (a cold torch + torchvision import
# from a slow disk takes seconds), and all a hung plug-in may cost a command that never
# needed it. A thread cannot be stopped, so an abandoned one lives on as a daemon.
PLUGIN_TIMEOUT_S = 20.0
_REASON_CHARS = 120  # an exception's text kept in a one-line reason

T = TypeVar("T")


class PluginWarning(UserWarning):
    """A third-party family skipped because it is broken (shown as one `warning:` line)."""


class _Broken(Exception):
    """Why a plug-in cannot be used; turned into a warning or a UsageError, never raised out."""


@cache
def _targets() -> dict[str, str]:
    """name -> "module:attribute"; a third-party entry point never replaces a built-in."""
    found = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    return found | BUILTIN


def family(name: str) -> Workload:
    """The family registered as `name`; UsageError listing the families when there is none,
    or naming the cause when it cannot be loaded."""
    target = _targets().get(name)
    if target is None:
        raise UsageError(f"no model family {name!r}", hint=f"the families here are: {_listing()}")
    found = _load(name)
    if isinstance(found, _Broken):
        raise UsageError(f"model family {name!r} cannot be loaded from {target}: {found}")
    return found


@cache
def _load(name: str) -> Workload | _Broken:
    """The family's object, or why not; failures are kept too, so a hung plug-in costs one
    PLUGIN_TIMEOUT_S per process, not one per lookup."""
    entry = EntryPoint(name, _targets()[name], GROUP)

    def load() -> tuple[object, bool]:
        obj = entry.load()
        return obj, isinstance(obj, Workload)  # in the thread: a hostile __getattr__ too

    if name in BUILTIN:  # ours: imported here (the fork server preloads them), bugs not hidden
        try:
            obj, is_workload = load()
        except Exception as exc:
            return _Broken(f"import raised {_describe(exc)}")
    else:
        try:
            obj, is_workload = _bounded("import", load)
        except _Broken as broken:
            return broken
    if not is_workload:
        return _Broken(f"its {type(obj).__name__} object is not a Workload")
    return obj  # type: ignore[return-value]


def _bounded(what: str, call: Callable[[], T]) -> T:
    """`call()` run in a daemon thread and given PLUGIN_TIMEOUT_S; _Broken when it raises
    anything but KeyboardInterrupt (SystemExit included) or has not returned by then."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # the plug-in's own sys.exit() or worse: contained
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name=f"libreyolo plug-in {what}", daemon=True)
    thread.start()
    thread.join(PLUGIN_TIMEOUT_S)
    if not outcome:
        raise _Broken(f"{what} did not finish within {PLUGIN_TIMEOUT_S:g} s")
    finished, value = outcome[0]
    if finished:
        return value
    if isinstance(value, KeyboardInterrupt):
        raise value
    raise _Broken(f"{what} raised {_describe(value)}")


def _describe(exc: BaseException) -> str:
    """`SystemExit(7)` or `ValueError: its first line`, one line, whatever the exception's
    own str() does (a plug-in's exception may fail even at that)."""
    kind = type(exc).__name__
    try:
        if isinstance(exc, SystemExit):
            text = f"{kind}({exc.code!r})"
        else:
            lines = str(exc).strip().splitlines()
            text = f"{kind}: {lines[0]}" if lines else kind
    except Exception:
        text = kind
    return text[:_REASON_CHARS]


def families() -> dict[str, str]:
    """Every registered family name -> where it lives ("module:attribute"), sorted by name."""
    return dict(sorted(_targets().items()))


def clear_cache() -> None:
    """Forget the entry points and loaded families (after installing a package at run time)."""
    _targets.cache_clear()
    _load.cache_clear()
    _warned.clear()
    importlib.invalidate_caches()


def detect_file(path: str | os.PathLike[str]) -> tuple[Workload, str | None, int | None]:
    """(family, size, nc) of a checkpoint file; size and nc None when the file does not say.

    A family we do not implement, or a file no family claims, is one CheckpointError line
    naming what the file holds and the families we have. A broken plug-in claims nothing
    (one warning says why); the family the metadata names being broken is a UsageError."""
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
        try:
            sniffed = _ask(meta, found, "detect", ckpt) or (None, None)
        except _Broken as why:
            raise UsageError(
                f"model family {meta!r} ({_targets()[meta]}) cannot read {path}: {why}"
            ) from None
        size, nc = ckpt.get("size"), ckpt.get("nc")
        size = size if isinstance(size, str) else sniffed[0]
        nc = nc if isinstance(nc, int) else sniffed[1]
        return found, size, nc
    usable, broken = _loadable()
    for name in list(usable):
        size = _contained(usable, broken, name, "claims_name", path.stem)
        if size is not None:
            sniffed = _contained(usable, broken, name, "detect", ckpt) or (None, None)
            if name in usable:  # a detect that failed leaves the name claim void too
                return usable[name], sniffed[0] or size, sniffed[1]
    for name in list(usable):
        claim = _contained(usable, broken, name, "detect", ckpt)
        if claim is not None:
            return usable[name], claim[0], claim[1]
    skipped = "; ".join(f"{name!r}: {why}" for name, why in broken.items() if name not in BUILTIN)
    raise CheckpointError(
        f"{path}: no model family we know holds these weights; "
        f"libreyolo profile measures {_listing()}",
        hint=f"broken plug-in families skipped: {skipped}" if skipped else None,
    )


def _contained(
    usable: dict[str, Workload], broken: dict[str, _Broken], name: str, method: str, arg: Any
) -> Any:
    """`_ask`; a broken plug-in is warned about and moved from `usable` to `broken` (None)."""
    try:
        return _ask(name, usable[name], method, arg)
    except _Broken as why:
        _warn_skipped(name, why)
        del usable[name]
        broken[name] = why
        return None


def _ask(name: str, workload: Workload, method: str, arg: Any) -> Any:
    """`workload.claims_name(stem)` or `workload.detect(ckpt)`; a plug-in's call bounded and
    its answer checked (a size or None; None or (size or None, nc or None)), else _Broken."""
    call = getattr(workload, method)
    if name in BUILTIN:
        return call(arg)
    answer = _bounded(method, lambda: call(arg))
    if method == "claims_name" and not (answer is None or isinstance(answer, str)):
        raise _Broken(
            f"{method} returned a value of type {type(answer).__name__}, not a size or None"
        )
    if method == "detect" and answer is not None:
        pair = tuple(answer) if isinstance(answer, tuple | list) else ()
        if len(pair) != 2 or not _is_size_nc(*pair):
            raise _Broken(
                f"{method} returned a value of type {type(answer).__name__}, not (size, nc) or None"
            )
        return pair
    return answer


def _is_size_nc(size: object, nc: object) -> bool:
    nc_ok = nc is None or (isinstance(nc, int) and not isinstance(nc, bool))
    return (size is None or isinstance(size, str)) and nc_ok


def preload_builtins() -> None:
    """Import the built-in families that import (a sweep's fork server, before any clock)."""
    for name in BUILTIN:
        with contextlib.suppress(UsageError):
            family(name)


def _loadable() -> tuple[dict[str, Workload], dict[str, _Broken]]:
    """The families whose modules import, built-ins first, and why the others do not; a
    broken plug-in claims no files (one warning), a broken built-in none either (asking for it
    by name says why)."""
    usable: dict[str, Workload] = {}
    broken: dict[str, _Broken] = {}
    for name in sorted(_targets(), key=lambda n: (n not in BUILTIN, n)):
        found = _load(name)
        if isinstance(found, _Broken):
            broken[name] = found
            if name not in BUILTIN:
                _warn_skipped(name, found)
        else:
            usable[name] = found
    return usable, broken


_warned: set[str] = set()  # one warning per broken plug-in and process, however often asked


def _warn_skipped(name: str, broken: _Broken) -> None:
    _warn_once(f"plug-in family {name!r} ({_targets()[name]}) skipped: {broken}")


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, PluginWarning, stacklevel=3)


def _listing() -> str:
    return ", ".join(sorted(_targets()))
