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

The folder holds the `MAX_EXPORTS` most recently used exports within `MAX_EXPORT_BYTES`; older
ones are removed, and only files of the cache's own names (`<key>.onnx`, `<key>.json`). Nothing
there is read, written or removed through a link (`cache_file`): a linked folder or file is not
used, and the export goes to a private temporary folder, as for a cache that is not ours.

Must not: build an ONNX Runtime session, time the window, or print.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn

from libreyolo.cache_file import (
    FOLDER_FLAGS,
    Entry,
    cache_dir,
    cache_folder,
    open_entry,
    own_files,
    read_file,
    remove_files,
    stale_temp_files,
    write_file,
)
from libreyolo.errors import NoProfileError
from libreyolo.measure.exec_mode import ExecFailedError, failure_line

INPUT_NAME = "images"
EXPORTER = "torchscript"
ONNX_DIR = "onnx"
SIDECAR_MAX_BYTES = 4096  # a sidecar larger than this is not ours: ignored
# One export per model, batch, side and opset: a sweep's grid of one model (4 batches x 4
# sides) is reused whole when it runs again. YOLOv9-t exports to ~8 MB, YOLOX-x to
# ~400 MB: the byte budget holds five of those; 2 GiB is also protobuf's limit on one file,
# so a larger file in the folder is no export of ours.
MAX_EXPORTS = 16
MAX_EXPORT_BYTES = 2 << 30
_EXPORT_FILE = re.compile(r"[0-9a-f]{32}\.(onnx|json)")  # `<export_key>.onnx` and its sidecar


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
    cached now. Without a cache folder of our own (`cache_folder`) the export goes to a
    private temporary folder, removed when the process ends."""
    batch, _, imgsz, _ = sample.shape
    key = export_key(model, batch=batch, imgsz=imgsz, opset=opset)
    cached_path = cache_dir() / ONNX_DIR / f"{key}.onnx"
    with cache_folder(ONNX_DIR, create=True) as folder:
        if folder is not None and not fresh:
            cached_s = _cached_export_s(folder, key)
            if cached_s is not None:
                with contextlib.suppress(OSError):  # used now: the last one pruned
                    os.utime(f"{key}.onnx", dir_fd=folder, follow_symlinks=False)
                return Export(path=cached_path, export_s=cached_s, cached=True)
        started = time.perf_counter()
        payload = _export_bytes(model, sample, output_names(probe), opset)
        export_s = time.perf_counter() - started
        if folder is not None and _kept(folder, key, payload, export_s):
            return Export(path=cached_path, export_s=export_s, cached=False)
    path = _scratch_export(key, payload, export_s)
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


def _scratch_export(key: str, payload: bytes, export_s: float) -> Path:
    """The export written into a new private temporary folder; NoProfileError (exit 3) when
    it cannot be."""
    folder = _scratch_folder()
    try:
        descriptor = os.open(folder, FOLDER_FLAGS)
        try:
            _store(descriptor, key, payload, export_s)
        finally:
            os.close(descriptor)
    except OSError as err:
        raise NoProfileError(
            f"cannot write the ONNX export in {folder}: {err.strerror or err} "
            "(free space there, or point TMPDIR elsewhere)"
        ) from None
    return folder / f"{key}.onnx"


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


def _kept(folder: int, key: str, payload: bytes, export_s: float) -> bool:
    """Whether the export could be stored in the cache `folder` (then pruned)."""
    try:
        _store(folder, key, payload, export_s)
    except OSError:  # full, or a folder in the way that cannot be removed
        return False
    _prune(folder, keep=key)
    return True


def _store(folder: int, key: str, payload: bytes, export_s: float) -> None:
    """The export and its sidecar (its time and digest) written into `folder`; OSError when
    they cannot be."""
    sidecar = {"export_s": export_s, "sha256": hashlib.sha256(payload).hexdigest()}
    for name, data in ((f"{key}.onnx", payload), (f"{key}.json", json.dumps(sidecar).encode())):
        _remove_folder_at(folder, name)
        write_file(folder, name, data)


def _remove_folder_at(folder: int, name: str) -> None:
    """A folder where an entry goes (a hostile entry) removed: the rename would fail on it. A
    link there is replaced by the rename itself, what it names untouched."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode):
            shutil.rmtree(name, dir_fd=folder)


def _prune(folder: int, *, keep: str) -> None:
    """The most recently used exports kept, `keep` (just made) first, up to `MAX_EXPORTS`
    and `MAX_EXPORT_BYTES`; the cache's other files of export names removed, oldest first,
    and a killed writer's temporary files. Files of any other name are left alone."""
    exports: dict[str, list[Entry]] = {}
    for entry in own_files(folder, _EXPORT_FILE):
        exports.setdefault(entry.name.partition(".")[0], []).append(entry)
    ranked = sorted(exports.items(), key=lambda item: (item[0] != keep, -_used_ns(item[1])))
    kept_bytes = 0
    removed: list[str] = []
    for rank, (_, files) in enumerate(ranked):
        kept_bytes += sum(entry.size_bytes for entry in files)
        if rank > 0 and (rank >= MAX_EXPORTS or kept_bytes > MAX_EXPORT_BYTES):
            removed += [entry.name for entry in files]
    remove_files(folder, [*removed, *stale_temp_files(folder)])


def _used_ns(files: Sequence[Entry]) -> int:
    return max(entry.mtime_ns for entry in files)


def _cached_export_s(folder: int, key: str) -> float | None:
    """The export's recorded seconds when both files are sound, else None (export again)."""
    recorded = read_file(folder, f"{key}.json", SIDECAR_MAX_BYTES)
    try:
        parsed = None if recorded is None else json.loads(recorded)
    except (ValueError, RecursionError):  # not JSON, or `[[[[...` nested too deep
        return None
    if not isinstance(parsed, dict):
        return None
    export_s = parsed.get("export_s")
    if isinstance(export_s, bool) or not isinstance(export_s, int | float) or export_s < 0:
        return None
    # The bytes' digest, not a parse: a file cut at a field boundary still parses.
    if parsed.get("sha256") != _digest(folder, f"{key}.onnx"):
        return None
    return float(export_s)


def _digest(folder: int, name: str) -> str | None:
    """The SHA-256 of the export `name` in `folder`; None when it is no regular file of an
    export's size."""
    try:
        with open_entry(folder, name) as file:
            if file is None or os.fstat(file.fileno()).st_size > MAX_EXPORT_BYTES:
                return None
            return hashlib.file_digest(file, "sha256").hexdigest()
    except OSError:
        return None
