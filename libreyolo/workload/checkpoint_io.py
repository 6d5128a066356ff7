"""Read a checkpoint file into its dict, whatever family it holds (one line per unusable file).

Role: the family-neutral half of checkpoint reading, shared by the registry (which family does
this file hold?) and each family's loader: `read_checkpoint` opens a file only with
`torch.load(weights_only=True)` and turns every failure into one `CheckpointError` line;
`state_dict_of` finds the weights inside the usual wrappers.
`check_format`, `pick_size` and `class_names` are the metadata rules every libreyolo 1.6.0 file
follows, whatever its family.
Must not: know any family's keys or sizes, build models, or resolve names.
"""

from __future__ import annotations

import importlib
import os
import pickle
import re
import struct
import sys
import warnings
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, TypeGuard

import torch
from torch import Tensor

from libreyolo.errors import CheckpointError, MissingFileError
from libreyolo.workload.data.dataset_config import MAX_CLASSES

# Errors torch.load raises on bytes that are not a (whole) checkpoint; anything else is a bug.
_LOAD_ERRORS = (RuntimeError, EOFError, KeyError, ValueError, IndexError, TypeError, struct.error)
_ZIP_MAGIC = b"PK\x03\x04"


def read_checkpoint(path: str | os.PathLike[str]) -> dict[str, object]:
    """The dict a checkpoint file holds, loaded on the CPU without unsafe unpickling."""
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(f"weights file not found: {path}")
    try:
        with path.open("rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot be read ({exc.strerror})") from None
    if not head:
        raise CheckpointError(f"{path}: empty file, not a checkpoint")
    try:
        with warnings.catch_warnings(), torch.serialization.safe_globals(_numpy_globals()):
            warnings.simplefilter("ignore")  # torch warns about pickle protocols before failing
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"Unsupported global: GLOBAL (\S+)", str(exc))
        if found:
            raise CheckpointError(
                f"{path}: needs unsafe unpickling (it stores {found.group(1)}); refusing to load it"
            ) from None
        raise CheckpointError(f"{path}: not a PyTorch checkpoint (unreadable pickle)") from None
    except _LOAD_ERRORS as exc:
        if head == _ZIP_MAGIC:
            raise CheckpointError(
                f"{path}: truncated or corrupt checkpoint ({first_line(exc)})"
            ) from None
        raise CheckpointError(f"{path}: not a PyTorch checkpoint") from None
    if not isinstance(obj, dict):
        raise CheckpointError(f"{path}: holds a {type(obj).__name__}, not a checkpoint dict")
    return obj


def training_config(path: str | os.PathLike[str]) -> dict[str, object] | None:
    """The training config a libreyolo 1.x trainer's checkpoint carries (its `config`, as
    `TrainConfig.to_dict()` wrote it), or None for a file without one (released weights)."""
    config = read_checkpoint(path).get("config")
    if config is None:
        return None
    if not isinstance(config, dict):
        raise CheckpointError(
            f"{path}: its training config is a {type(config).__name__}, not a mapping"
        )
    return config


def _numpy_globals() -> list[Any]:
    """Plain numpy arrays and scalars: trainer files keep the numpy RNG state in `rng_state`."""
    import numpy as np  # only here: reading v1.0 model files never needs it

    multiarray = importlib.import_module("numpy._core.multiarray")
    dtypes = [type(np.dtype(t)) for t in (np.bool_, np.uint8, np.int32, np.int64, np.uint32)]
    dtypes += [type(np.dtype(t)) for t in (np.float16, np.float32, np.float64)]
    return [multiarray._reconstruct, multiarray.scalar, np.ndarray, np.dtype, *dtypes]


def first_line(exc: BaseException) -> str:
    """The first line of an exception's text, at most 120 characters (for one-line errors)."""
    text = str(exc).strip().splitlines()
    return text[0][:120] if text else type(exc).__name__


def is_state_dict(obj: object) -> TypeGuard[dict[str, Tensor]]:
    """A non-empty dict of tensors."""
    return isinstance(obj, dict) and bool(obj) and all(isinstance(v, Tensor) for v in obj.values())


def state_dict_of(ckpt: Mapping[str, object], path: str | os.PathLike[str]) -> dict[str, Tensor]:
    """The weights: `model`, else `state_dict`, else `ema` (or its `module`), else the bare dict."""
    for key in ("model", "state_dict", "ema"):
        inner = ckpt.get(key)
        if isinstance(inner, dict) and is_state_dict(inner.get("module")):
            inner = inner["module"]
        if is_state_dict(inner):
            return inner
    if is_state_dict(ckpt):
        return ckpt
    raise CheckpointError(f"{path}: no state dict found (looked for 'model', 'state_dict', 'ema')")


def check_format(ckpt: Mapping[str, object], path: Path, schema_version: str) -> None:
    """A readable schema (same major version) holding a `detect` model, else one line."""
    version = str(ckpt.get("schema_version", schema_version))
    if version.split(".")[0] != schema_version.split(".")[0]:
        raise CheckpointError(f"{path}: schema version {version} is not readable (knows 1.x)")
    task = ckpt.get("task", "detect")
    if task != "detect":
        raise CheckpointError(f"{path}: holds a {task!r} model; only 'detect' is supported")


def pick_size(
    path: Path,
    label: str,
    sizes: Collection[str],
    *,
    meta: object,
    tensors: str | None,
    from_name: str | None,
) -> tuple[str, str]:
    """(size, where it came from): the metadata, else the tensors, else the file name; the
    metadata must be one of `sizes` and agree with the tensors."""
    if meta is not None and meta not in sizes:
        raise CheckpointError(f"{path}: unknown {label} size {meta!r} in the metadata")
    if meta is not None and tensors is not None and meta != tensors:
        raise CheckpointError(
            f"{path}: metadata says size {meta!r} but the tensors are size {tensors!r}"
        )
    for size, source in ((meta, "metadata"), (tensors, "tensors"), (from_name, "file name")):
        if isinstance(size, str):
            return size, source
    raise CheckpointError(
        f"{path}: cannot tell the {label} size (no metadata, tensors or file name)"
    )


def class_names(raw: object, nc: int, path: Path) -> dict[int, str]:
    """The `names` metadata as {i: name} for every class, `class{i}` where it has none.

    `names` is a list (or tuple) of names, or a map from class index (an int, or its decimal
    text) to name; a name is text or a number (str() of it). Entries from index `nc` on name
    no class of this model and are left out unread. Anything else (a key that is no class
    index, a name that is no text, `names` neither list nor map, more classes than a dataset
    may have) is one CheckpointError naming the file and the bad entry, as every other
    unusable metadata is."""
    if nc > MAX_CLASSES:  # before the {i: name} map: a zero-size head can claim 10**12
        raise CheckpointError(f"{path}: nc={nc} is more than {MAX_CLASSES} classes")
    if raw is None:
        pairs: list[tuple[int, object]] = []
    elif isinstance(raw, list | tuple):
        pairs = list(enumerate(raw[:nc]))
    elif isinstance(raw, dict):
        pairs = [(_class_index(key, path), value) for key, value in raw.items()]
    else:
        raise CheckpointError(
            f"{path}: 'names' is a {type(raw).__name__}, not a list or dict of class names"
        )
    given: dict[int, str] = {}
    for index, value in pairs:
        if index >= nc:
            continue
        if index in given:
            raise CheckpointError(f"{path}: 'names' gives class {index} twice")
        given[index] = _class_name(value, index, path)
    return {i: given.get(i, f"class{i}") for i in range(nc)}


# Longer decimal text than this is past any class count (and past int()'s digit limit).
_MAX_INDEX_DIGITS = 18


def _class_index(key: object, path: Path) -> int:
    """A `names` key as a class index: a non-negative int, or its decimal text ("3")."""
    if isinstance(key, int) and not isinstance(key, bool) and key >= 0:
        return key
    if isinstance(key, str) and key.isascii() and key.isdigit():
        digits = key.lstrip("0") or "0"
        return int(digits) if len(digits) <= _MAX_INDEX_DIGITS else sys.maxsize
    raise CheckpointError(f"{path}: 'names' key {_brief(key)} is not a class index")


def _class_name(value: object, index: int, path: Path) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise CheckpointError(
        f"{path}: 'names' entry {index} is a {type(value).__name__}, not a class name"
    )


def _brief(value: object) -> str:
    """`value` for a one-line message: its repr, or its type when that is long."""
    text = repr(value)
    return text if len(text) <= 40 and "\n" not in text else f"(a {type(value).__name__})"
