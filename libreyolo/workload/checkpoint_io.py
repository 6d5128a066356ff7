"""Read a checkpoint file into its dict, whatever family it holds (one line per unusable file).

Role: the family-neutral half of checkpoint reading, shared by the registry (which family does
this file hold?) and each family's loader: `read_checkpoint` opens a file only with
`torch.load(weights_only=True)` and turns every failure into one `CheckpointError` line;
`state_dict_of` finds the weights inside the usual wrappers.
Must not: know any family's keys, sizes or metadata rules, build models, or resolve names.
"""

from __future__ import annotations

import importlib
import os
import pickle
import re
import struct
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from libreyolo.errors import CheckpointError, MissingFileError

# Errors torch.load raises on bytes that are not a (whole) checkpoint; anything else is a bug.
_LOAD_ERRORS = (RuntimeError, EOFError, KeyError, ValueError, IndexError, TypeError, struct.error)
_ZIP_MAGIC = b"PK\x03\x04"


def read_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
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


def is_state_dict(obj: object) -> bool:
    """A non-empty dict of tensors."""
    return isinstance(obj, dict) and bool(obj) and all(isinstance(v, Tensor) for v in obj.values())


def state_dict_of(ckpt: dict[str, Any], path: str | os.PathLike[str]) -> dict[str, Tensor]:
    """The weights: `model`, else `state_dict`, else `ema` (or its `module`), else the bare dict."""
    for key in ("model", "state_dict", "ema"):
        inner = ckpt.get(key)
        if isinstance(inner, dict) and is_state_dict(inner.get("module")):
            inner = inner["module"]
        if is_state_dict(inner):
            return inner  # type: ignore[return-value]
    if is_state_dict(ckpt):
        return ckpt
    raise CheckpointError(f"{path}: no state dict found (looked for 'model', 'state_dict', 'ema')")
