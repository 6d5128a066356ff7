"""Read and write libreyolo v1 YOLOv9 checkpoints (and the older forms 1.6.0 also loads).

Reading accepts the v1.0 wrapper (`model` + metadata), `state_dict`/`ema` wrappers, bare state
dicts, `module.` prefixes (DDP), `detect.*` head keys (renamed `head.*`) and a stored DFL vector
(ignored), as libreyolo 1.6.0 does; without `size` metadata the size is read off the tensors.
Every unusable file becomes one `CheckpointError` line; files are only ever opened with
`torch.load(weights_only=True)`. Upstream MTL numbered-key files are refused, not converted.
This module must not resolve model names or download anything (that is `api.resolve_weights`).
"""

from __future__ import annotations

import os
import re
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
from libreyolo.workload.yolo9.model import SIZES, YOLOv9, default_cls_width

SCHEMA_VERSION = "1.0"
FAMILY = "yolo9"
LETTERBOX_PADS = ("topleft", "center")
_NAME_SIZE = {
    "yolo9": re.compile(r"libreyolo9([tsmc])(?=[-_.])", re.IGNORECASE),
    "yolox": re.compile(r"libreyolox([ntsmlx])(?=[-_.])", re.IGNORECASE),
}
# Keys that carry no weights of ours: legacy DFL vectors, buffers, MTL's anchor-to-vector layer.
_DROPPED = re.compile(r"(^|\.)(dfl\.conv\.weight|dfl\.project|stride|anc2vec\..*)$")


@dataclass(frozen=True)
class Yolo9CheckpointInfo:
    """What a YOLOv9 file holds; `size_source` is "metadata", "tensors" or "file name"."""

    size: str
    size_source: str
    nc: int
    names: dict[int, str]
    cls_width: int
    imgsz: int
    letterbox_pad: str
    has_aux: bool


def _normalise_keys(state: dict[str, Tensor]) -> dict[str, Tensor]:
    out: dict[str, Tensor] = {}
    for key, value in state.items():
        while key.startswith("module."):  # DDP wrappers, possibly nested
            key = key[len("module.") :]
        if key.startswith("detect."):  # pre-1.0 head prefix
            key = "head." + key[len("detect.") :]
        if not _DROPPED.search(key):
            out[key] = value
    return out


def sniff_family(state: dict[str, Tensor]) -> str | None:
    keys = list(state)
    if any(k.startswith(("backbone.elan", "neck.elan")) for k in keys):
        return "yolo9"
    if any(k.startswith("backbone.backbone.") or "cls_preds" in k for k in keys):
        return "yolox"
    if any(re.match(r"\d+\.", k) for k in keys):
        return "mtl"
    return None


def _sniff_size(state: dict[str, Tensor]) -> str | None:
    """Size from the stem and first-block widths, as 1.6.0 sniffs it: stem 16 -> t, 64 -> c,
    32 -> s or m by the first block's 64 or 128 channels."""
    conv0 = state.get("backbone.conv0.conv.weight")
    first = state.get("backbone.elan1.cv1.conv.weight")
    stem = int(conv0.shape[0]) if conv0 is not None else None
    if stem == 16:
        return "t"
    if stem == 64:
        return "c"
    if stem == 32 and first is not None:
        return {64: "s", 128: "m"}.get(int(first.shape[0]))
    return None


def size_from_filename(path: str | os.PathLike[str], family: str = FAMILY) -> str | None:
    """The size letter in a name such as `LibreYOLO9s.pt` or `libreyolo9m-detect.pt`, if any."""
    pattern = _NAME_SIZE.get(family)
    found = pattern.search(Path(path).name) if pattern else None
    return found.group(1).lower() if found else None


def _check_family(ckpt: Mapping[str, object], state: dict[str, Tensor], path: Path) -> None:
    family = ckpt.get("model_family")
    if family is None:
        family = sniff_family(state)
        if family == "mtl":
            raise CheckpointError(
                f"{path}: upstream MTL numbered keys are not supported; convert them with libreyolo"
            )
        if family is None:
            raise CheckpointError(f"{path}: does not hold a YOLOv9 state dict")
    if family != FAMILY:
        raise CheckpointError(f"{path}: holds a {family!r} model, not YOLOv9 ({FAMILY!r})")
    check_format(ckpt, path, SCHEMA_VERSION)


def _resolve_size(
    ckpt: Mapping[str, object], state: dict[str, Tensor], path: Path
) -> tuple[str, str]:
    from_name = size_from_filename(path)
    return pick_size(
        path,
        "YOLOv9",
        SIZES,
        meta=ckpt.get("size"),
        tensors=_sniff_size(state),
        from_name=from_name,
    )


def _inspect(
    ckpt: Mapping[str, object], state: dict[str, Tensor], path: Path
) -> Yolo9CheckpointInfo:
    """Validate the metadata of a read checkpoint against its tensors."""
    _check_family(ckpt, state, path)
    size, source = _resolve_size(ckpt, state, path)
    last, first = state.get("head.cv3.0.2.weight"), state.get("head.cv3.0.0.conv.weight")
    nc = ckpt.get("nc", int(last.shape[0]) if last is not None else None)
    if isinstance(nc, bool) or not isinstance(nc, int) or nc < 1:
        raise CheckpointError(f"{path}: cannot tell the number of classes")
    if last is not None and int(last.shape[0]) != nc:
        raise CheckpointError(f"{path}: metadata says nc={nc} but the head has {last.shape[0]}")
    imgsz = ckpt.get("imgsz", 640)
    if isinstance(imgsz, bool) or not isinstance(imgsz, int) or imgsz < 32:
        raise CheckpointError(f"{path}: imgsz {imgsz!r} is not an input size")
    pad = ckpt.get("letterbox_pad", "topleft")
    if pad not in LETTERBOX_PADS:
        raise CheckpointError(f"{path}: letterbox_pad {pad!r} is not one of {LETTERBOX_PADS}")
    ch0 = SIZES[size].b3[0]
    return Yolo9CheckpointInfo(
        size=size,
        size_source=source,
        nc=nc,
        names=class_names(ckpt.get("names"), nc, path),
        cls_width=int(first.shape[0]) if first is not None else default_cls_width(ch0, nc),
        imgsz=imgsz,
        letterbox_pad=pad,
        has_aux=any(k.startswith(("aux.", "aux_head.")) for k in state),
    )


def load_checkpoint(
    path: str | os.PathLike[str],
    *,
    size: str | None = None,
    device: str | torch.device = "cpu",
    aux: bool = False,
) -> YOLOv9:
    """A YOLOv9 in eval mode with the file's weights; `aux=True` keeps (or freshly builds) PGI."""
    path = Path(path)
    if size is not None and size not in SIZES:
        raise UsageError(f"unknown YOLOv9 size {size!r}; expected one of {', '.join(SIZES)}")
    ckpt = read_checkpoint(path)
    state = _normalise_keys(state_dict_of(ckpt, path))
    info = _inspect(ckpt, state, path)
    if size is not None and size != info.size:
        raise CheckpointError(
            f"{path}: size {size!r} was asked for but the file holds YOLOv9-{info.size} "
            f"(from {info.size_source})"
        )
    model = YOLOv9(info.size, info.nc, names=info.names, aux=aux, cls_width=info.cls_width)
    model.imgsz, model.letterbox_pad = info.imgsz, info.letterbox_pad
    _load_weights(model, state, path, aux=aux)
    try:
        return model.to(device).eval()
    except (RuntimeError, AssertionError) as exc:  # unknown name, no driver, CPU-only torch
        raise UsageError(f"device {str(device)!r} cannot be used: {first_line(exc)}") from None


def _load_weights(model: YOLOv9, state: dict[str, Tensor], path: Path, *, aux: bool) -> None:
    """Shape-checked load; keys the model lacks are ignored, main-model keys must all be present."""
    own = model.state_dict()
    for key, value in state.items():
        if key in own and own[key].shape != value.shape:
            raise CheckpointError(
                f"{path}: {key} has shape {tuple(value.shape)} but YOLOv9-{model.size} "
                f"(nc={model.nc}) expects {tuple(own[key].shape)}"
            )
    # A fresh aux branch on top of detection-only weights is how PGI training starts.
    missing = [
        k for k in own if k not in state and not (aux and k.startswith(("aux.", "aux_head.")))
    ]
    if missing:
        raise CheckpointError(
            f"{path}: {len(missing)} tensors of YOLOv9-{model.size} are missing, e.g. {missing[0]}"
        )
    model.load_state_dict({k: v for k, v in state.items() if k in own}, strict=False)


def save_checkpoint(model: YOLOv9, path: str | os.PathLike[str]) -> Path:
    """Write `model` as a libreyolo v1.0 checkpoint, atomically (temp file + os.replace)."""
    if model.is_fused:
        raise UsageError("a fused model cannot be saved as a checkpoint; save the unfused model")
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
        "letterbox_pad": model.letterbox_pad,
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
