"""The ONNX export behind `--exec onnxruntime`, made once and cached.

Role: export the (fused, eval) model with torch.onnx's legacy TorchScript exporter and keep the
file in `$LIBREYOLO_CACHE_DIR/onnx/`, keyed by a hash of the state dict's bytes, the model's
class, batch, image side, opset and torch version, so another checkpoint, a random init or
another fusion never reuses a stale file. A JSON sidecar keeps the export's own wall time, so a
cached hit reports the original `export_s`, and the file's SHA-256, so a truncated or altered
file is known. An entry that is not a file, or whose sidecar is missing, huge, not ours or
names other bytes, is ignored and exported again, never fatal. Anyone who can write the folder
can replace both files, so the session built on an export is also checked against the eager
forward (`onnx_exec`) and a cached export that disagrees is made again (`fresh`).

Must not: build an ONNX Runtime session, time the window, or print.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn

from libreyolo.cache_file import trusted_cache_dir
from libreyolo.document.files import write_atomic
from libreyolo.errors import NoProfileError
from libreyolo.measure.exec_mode import ExecFailedError, failure_line

INPUT_NAME = "images"
EXPORTER = "torchscript"
ONNX_DIR = "onnx"
SIDECAR_MAX_BYTES = 4096  # a sidecar larger than this is not ours: ignored


class Export(NamedTuple):
    """An ONNX file ready to run: where, how long its export took, and whether it was cached."""

    path: Path
    export_s: float
    cached: bool


def export_key(model: nn.Module, *, batch: int, imgsz: int, opset: int) -> str:
    """The hash naming the export of `model` at this batch, side and opset."""
    digest = hashlib.sha256()
    for part in (type(model).__qualname__, batch, imgsz, opset, torch.__version__, EXPORTER):
        digest.update(f"{part}\0".encode())
    for name, tensor in model.state_dict().items():
        flat = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(f"{name}\0{tensor.dtype}\0{tuple(tensor.shape)}\0".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:32]


def output_names(probe: object) -> list[str]:
    """The ONNX outputs of the eager forward's result: one tensor, or a list/tuple of them."""
    count = 1 if isinstance(probe, torch.Tensor) else len(probe)  # type: ignore[arg-type]
    return [f"output{i}" for i in range(count)]


def cached_or_exported(
    model: nn.Module, sample: torch.Tensor, probe: object, *, opset: int, fresh: bool = False
) -> Export:
    """The cached export of `model` for `sample`'s shape, else (or with `fresh`) a new one,
    cached now. Without a trusted cache folder (`trusted_cache_dir`) the export goes to a
    private temporary folder, removed when the process ends."""
    batch, _, imgsz, _ = sample.shape
    key = export_key(model, batch=batch, imgsz=imgsz, opset=opset)
    cache = trusted_cache_dir(create=True)
    folder = cache / ONNX_DIR if cache is not None else _scratch_folder()
    path, sidecar = folder / f"{key}.onnx", folder / f"{key}.json"
    export_s = None if fresh else _cached_export_s(path, sidecar)
    if export_s is not None:
        return Export(path=path, export_s=export_s, cached=True)
    started = time.perf_counter()
    payload = _export_bytes(model, sample, output_names(probe), opset)
    export_s = time.perf_counter() - started
    _replace(path, payload)
    digest = hashlib.sha256(payload).hexdigest()
    _replace(sidecar, json.dumps({"export_s": export_s, "sha256": digest}).encode())
    return Export(path=path, export_s=export_s, cached=False)


def private_folder(what: str, prefix: str) -> Path:
    """A fresh temporary folder only this user can enter (`mkdtemp`, 0700) for `what`;
    NoProfileError (exit 3) when the temporary folder cannot hold one."""
    try:
        return Path(tempfile.mkdtemp(prefix=prefix))
    except OSError as err:
        raise NoProfileError(
            f"cannot make a folder for {what} in {tempfile.gettempdir()}: "
            f"{err.strerror or err} (free space there, or point TMPDIR elsewhere)"
        ) from None


def _scratch_folder() -> Path:
    folder = private_folder("the ONNX export", "libreyolo-onnx-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _export_bytes(model: nn.Module, sample: torch.Tensor, outputs: list[str], opset: int) -> bytes:
    import warnings

    buffer = io.BytesIO()
    try:
        # The legacy exporter warns that it is legacy on every call; it is the one asked for.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.onnx.export(
                model,
                (sample,),
                buffer,  # type: ignore[arg-type]  # the legacy exporter writes file objects
                dynamo=False,
                opset_version=opset,
                input_names=[INPUT_NAME],
                output_names=outputs,
            )
    except Exception as err:  # the exporter's errors (unsupported ops) share no base class
        raise ExecFailedError(
            f"ONNX export failed: {failure_line(err)}",
            hint="run --exec eager, or try another exec.opset",
        ) from err
    return buffer.getvalue()


def _replace(target: Path, payload: bytes) -> None:
    """Write atomically; a non-file in the way (a hostile entry) is removed first."""
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.is_symlink():
        target.unlink()
    write_atomic(target, payload)


def _cached_export_s(path: Path, sidecar: Path) -> float | None:
    """The export's recorded seconds when both files are sound, else None (export again)."""
    try:
        if path.is_symlink() or not path.is_file() or not sidecar.is_file():
            return None
        if sidecar.stat().st_size > SIDECAR_MAX_BYTES:
            return None
        recorded = json.loads(sidecar.read_text(encoding="utf-8"))
        export_s = recorded.get("export_s") if isinstance(recorded, dict) else None
        if isinstance(export_s, bool) or not isinstance(export_s, int | float) or export_s < 0:
            return None
        # The bytes' digest, not a parse: a file cut at a field boundary still parses.
        if recorded.get("sha256") != hashlib.sha256(path.read_bytes()).hexdigest():
            return None
    except (OSError, ValueError):  # unreadable or not JSON: a cache miss, not an error
        return None
    return float(export_s)
