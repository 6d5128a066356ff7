"""Read and write libreyolo 1.6.0 YOLOX checkpoints (official YOLOX key names, key for key).

Reading accepts the v1.0 wrapper (`model` + metadata), official YOLOX's training files (`model`
beside `optimizer`...), `state_dict`/`ema` wrappers, bare state dicts and `module.` prefixes.
Family: the `model_family` metadata, else the keys, else a `LibreYOLOX<size>.pt` file name; size:
metadata, else the stem width, else the file name; nc from `head.cls_preds.0.weight`. Every
unusable file becomes one `CheckpointError` line, worded as YOLOv9's loader words them (the
file-level reading is shared with it); files are only opened with `torch.load(weights_only=True)`.
This module must not resolve model names, download anything or route between families (the
Workload registry calls `detect`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from libreyolo import __version__
from libreyolo.errors import CheckpointError, UsageError
from libreyolo.workload.checkpoint_io import (
    check_format,
    class_names,
    first_line,
    pick_size,
    read_checkpoint,
    state_dict_of,
)
from libreyolo.workload.yolo9.checkpoint import size_from_filename, sniff_family
from libreyolo.workload.yolox.model import SIZES, YOLOX

SCHEMA_VERSION = "1.0"
FAMILY = "yolox"
STEM_KEY = "backbone.backbone.stem.conv.conv.weight"
CLS_KEY = "head.cls_preds.0.weight"
_SIZE_BY_STEM = {spec.stem_width: size for size, spec in SIZES.items()}


@dataclass(frozen=True)
class YoloxCheckpointInfo:
    """What a YOLOX file holds; `size_source` is "metadata", "tensors" or "file name"."""

    size: str
    size_source: str
    nc: int
    names: dict[int, str]
    imgsz: int


def _normalise_keys(state: Mapping[str, Tensor]) -> dict[str, Tensor]:
    out: dict[str, Tensor] = {}
    for key, value in state.items():
        while key.startswith("module."):  # DDP wrappers, possibly nested
            key = key[len("module.") :]
        out[key] = value
    return out


def _size_from_stem(state: Mapping[str, Tensor]) -> str | None:
    stem = state.get(STEM_KEY)
    return _SIZE_BY_STEM.get(int(stem.shape[0])) if stem is not None and stem.ndim == 4 else None


def detect(state: Mapping[str, Tensor]) -> tuple[str, str, int] | None:
    """("yolox", size, nc) when `state` holds a YOLOX of a known size, else None.

    Needs the stem (its width gives the size) and the first class prediction layer (nc).
    """
    state = _normalise_keys(state)
    size, cls = _size_from_stem(state), state.get(CLS_KEY)
    if size is None or cls is None or cls.ndim != 4:
        return None
    return FAMILY, size, int(cls.shape[0])


def _check_family(ckpt: Mapping[str, object], state: dict[str, Tensor], path: Path) -> None:
    family = ckpt.get("model_family")
    if family is None:
        family = sniff_family(state)
        if family is None and size_from_filename(path, FAMILY) is not None:
            family = FAMILY  # unrecognised keys in a LibreYOLOX<size>.pt: the key check reports
        if family == "mtl":
            raise CheckpointError(f"{path}: holds numbered (MTL-style) keys, not a YOLOX model")
        if family is None:
            raise CheckpointError(f"{path}: does not hold a YOLOX state dict")
    if family != FAMILY:
        raise CheckpointError(f"{path}: holds a {family!r} model, not YOLOX ({FAMILY!r})")
    check_format(ckpt, path, SCHEMA_VERSION)


def _resolve_size(
    ckpt: Mapping[str, object], state: dict[str, Tensor], path: Path
) -> tuple[str, str]:
    from_name = size_from_filename(path, FAMILY)
    return pick_size(
        path,
        "YOLOX",
        SIZES,
        meta=ckpt.get("size"),
        tensors=_size_from_stem(state),
        from_name=from_name,
    )


def _inspect(
    ckpt: Mapping[str, object], state: dict[str, Tensor], path: Path
) -> YoloxCheckpointInfo:
    """Validate the metadata of a read checkpoint against its tensors."""
    _check_family(ckpt, state, path)
    size, source = _resolve_size(ckpt, state, path)
    cls = state.get(CLS_KEY)
    nc = ckpt.get("nc", int(cls.shape[0]) if cls is not None else None)
    if isinstance(nc, bool) or not isinstance(nc, int) or nc < 1:
        raise CheckpointError(f"{path}: cannot tell the number of classes")
    if cls is not None and int(cls.shape[0]) != nc:
        raise CheckpointError(f"{path}: metadata says nc={nc} but the head has {cls.shape[0]}")
    imgsz = ckpt.get("imgsz", SIZES[size].default_imgsz)
    if isinstance(imgsz, bool) or not isinstance(imgsz, int) or imgsz < 32:
        raise CheckpointError(f"{path}: imgsz {imgsz!r} is not an input size")
    return YoloxCheckpointInfo(size, source, nc, class_names(ckpt.get("names"), nc, path), imgsz)


def load_checkpoint(
    path: str | os.PathLike[str],
    *,
    size: str | None = None,
    device: str | torch.device = "cpu",
) -> YOLOX:
    """A YOLOX in eval mode with the file's weights (every tensor present, none extra)."""
    path = Path(path)
    if size is not None and size not in SIZES:
        raise UsageError(f"unknown YOLOX size {size!r}; expected one of {', '.join(SIZES)}")
    ckpt = read_checkpoint(path)
    state = _normalise_keys(state_dict_of(ckpt, path))
    info = _inspect(ckpt, state, path)
    if size is not None and size != info.size:
        raise CheckpointError(
            f"{path}: size {size!r} was asked for but the file holds YOLOX-{info.size} "
            f"(from {info.size_source})"
        )
    model = YOLOX(info.size, info.nc, names=info.names)
    model.imgsz = info.imgsz
    _load_weights(model, state, path)
    try:
        return model.to(device).eval()
    except (RuntimeError, AssertionError) as exc:  # unknown name, no driver, CPU-only torch
        raise UsageError(f"device {str(device)!r} cannot be used: {first_line(exc)}") from None


def _load_weights(model: YOLOX, state: dict[str, Tensor], path: Path) -> None:
    """Strict, shape-checked load: 1.6.0 and official YOLOX write exactly the model's tensors."""
    own = model.state_dict()
    label = f"YOLOX-{model.size} (nc={model.nc})"
    for key, value in state.items():
        if key in own and own[key].shape != value.shape:
            raise CheckpointError(
                f"{path}: {key} has shape {tuple(value.shape)} but {label} "
                f"expects {tuple(own[key].shape)}"
            )
    missing = [k for k in own if k not in state]
    if missing:
        raise CheckpointError(
            f"{path}: {len(missing)} tensors of YOLOX-{model.size} are missing, e.g. {missing[0]}"
        )
    unexpected = [k for k in state if k not in own]
    if unexpected:
        raise CheckpointError(
            f"{path}: {len(unexpected)} tensors are not part of YOLOX-{model.size}, "
            f"e.g. {unexpected[0]}"
        )
    model.load_state_dict(state)


def save_checkpoint(model: YOLOX, path: str | os.PathLike[str]) -> Path:
    """Write `model` in 1.6.0's v1.0 layout, atomically (temp file + os.replace)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    weights = {
        k: (v.detach().to("cpu", torch.float32) if v.is_floating_point() else v.detach().cpu())
        for k, v in model.state_dict().items()
    }
    payload: dict[str, object] = {
        "model": weights,
        "schema_version": SCHEMA_VERSION,
        "libreyolo_version": __version__,
        "model_family": FAMILY,
        "size": model.size,
        "task": "detect",
        "nc": model.nc,
        "names": {int(k): str(v) for k, v in model.names.items()},
        "imgsz": int(model.imgsz),
    }
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save(payload, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
