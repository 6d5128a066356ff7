"""Write runs as TensorBoard scalars: one run folder per point, step = the point's index.

Role: each run's metrics become scalar summaries (tag = the metric name, with its unit) in an
event file `<dir>/<point>/events.out.tfevents.<time>.<host>.<pid>.libreyolo`, framed as
TFRecords (length, masked CRC-32C of the length, the serialised `Event`, masked CRC-32C of
it). The `Event` protos are TensorBoard's own (`tensorboard.compat.proto`, protobuf only);
the framing is written here because TensorBoard's `EventFileWriter` imports numpy through its
TensorFlow stub, and `profile log` is a reader that imports no numpy. TensorBoard's
`EventAccumulator` reads the files back (tests/tracking/).

Point names come from a `sweep.json`, which anyone may have edited: each becomes exactly one
folder directly under `<dir>` (`run_folder`), never a path that climbs out of it, and a folder
that is a symbolic link is refused rather than followed.

Must not: import TensorBoard at module level, numpy, or torch.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import struct
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from libreyolo.analysis.tracked import TrackedRun
from libreyolo.errors import DestinationError
from libreyolo.tracking.extras import require

FILE_VERSION = "brain.Event:2"  # the first event of every event file, as TensorBoard writes it
_CRC32C_POLY = 0x82F63B78  # Castagnoli, reflected: TFRecord's checksum
_MASK_DELTA = 0xA282EAD8  # TFRecord's mask, so a CRC of CRCs does not look valid
# separators, control characters and lone surrogates (no file system takes those)
_NOT_IN_A_NAME = re.compile(r"[/\\\x00-\x1f\x7f\ud800-\udfff]")
MAX_FOLDER_BYTES = 200  # a file system's name limit is 255 bytes; room for a suffix


def run_folder(name: str, taken: set[str]) -> str:
    """`name` as one folder name no other run of the call has taken: separators and control
    characters become `_`, `.`/`..`/empty get a `_` in front, an overlong name is cut and
    keeps a digest of the whole, and a repeat gets `-2`, `-3`, ..."""
    folder = _NOT_IN_A_NAME.sub("_", name)
    if folder in ("", ".", ".."):
        folder = "_" + folder
    if len(folder.encode("utf-8")) > MAX_FOLDER_BYTES:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        head = folder.encode("utf-8")[: MAX_FOLDER_BYTES - 13].decode("utf-8", "ignore")
        folder = f"{head}-{digest}"
    unique, count = folder, 1
    while unique in taken:
        count += 1
        unique = f"{folder}-{count}"
    taken.add(unique)
    return unique


@cache
def _crc_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _CRC32C_POLY if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C of `data`."""
    table, crc = _crc_table(), 0xFFFFFFFF
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def _record(data: bytes) -> bytes:
    header = struct.pack("<Q", len(data))
    return (
        header
        + struct.pack("<I", masked_crc32c(header))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


def log_tensorboard(log_dir: str, runs: Sequence[TrackedRun]) -> dict[str, str]:
    """Write one event file per run under `log_dir`, in one folder per run named after it
    (`run_folder`); the folder of each run by its name. DestinationError (exit 2) when a folder
    cannot be made or written, or is a symbolic link."""
    require("tensorboard.compat.proto.event_pb2", "tensorboard", "--tensorboard")
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    written: dict[str, str] = {}
    taken: set[str] = set()
    for run in runs:
        folder = Path(log_dir) / run_folder(run.name, taken)
        if folder.is_symlink():
            raise DestinationError(
                f"cannot write TensorBoard events under {folder}: it is a symbolic link"
            )
        wall_s = time.time()
        events = [Event(wall_time=wall_s, file_version=FILE_VERSION)]
        values = [Summary.Value(tag=k, simple_value=v) for k, v in run.metrics.items()]
        events.append(Event(wall_time=wall_s, step=run.index, summary=Summary(value=values)))
        name = f"events.out.tfevents.{int(wall_s)}.{socket.gethostname()}.{os.getpid()}.libreyolo"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with open(folder / name, "wb") as stream:
                stream.write(b"".join(_record(e.SerializeToString()) for e in events))
        except OSError as err:
            raise DestinationError(
                f"cannot write TensorBoard events under {folder}: {err.strerror or err}"
            ) from None
        written[run.name] = str(folder)
    return written
