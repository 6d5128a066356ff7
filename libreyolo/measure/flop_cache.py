"""FLOP counts kept across runs: counting YOLOv9-t at 640 takes longer than one real forward
of it on a CPU (0.32 s against 0.20 s on a 2-core host, 2 % of the README's main job), and a
count depends only on the architecture and the input, so a machine counts each model at each
input once.

Role: `flop_key` hashes what a count depends on: the module tree as `repr` prints it (every
layer's channels, kernel, stride, groups), the source of every module class outside torch (its
forward's routing), this counter's own source (its convention, its grouped-convolution fix),
the batch, the side, train or eval, fused or not, and torch's version (its FLOP formulas). What
a forward reads from a plain attribute is not in it: the families' forwards route by their
modules and the train/eval mode only. A model whose classes have no source file (defined in
`python -c`) gets no key and is counted every time. Entries live in
`$LIBREYOLO_CACHE_DIR/flop_counts.json`, the newest `MAX_ENTRIES`; a malformed entry is
ignored and counted again, never fatal.

Must not: count (flop_count does), or trust an entry it has not checked.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import msgspec
import torch
from torch import nn

from libreyolo.cache_file import read_entries, write_entries
from libreyolo.measure import flop_count
from libreyolo.measure.flop_count import FlopCount

CACHE_NAME = "flop_counts.json"
MAX_ENTRIES = 256  # a sweep's grid of models and sizes; the oldest beyond it are dropped
MAX_FLOPS = 10**18  # a count beyond an exaFLOP per input is not one of ours
MAX_COUNT_MS = 1e9  # a count said to have taken longer than 11 days is not one of ours
_KEY_VERSION = "1"


def flop_key(model: nn.Module, *, batch: int, imgsz: int, training: bool) -> str | None:
    """The hash naming `model`'s count at this input, or None when a class's source is unknown."""
    sources = _class_sources(model)
    if sources is None:
        return None
    digest = hashlib.sha256()
    fused = bool(getattr(model, "is_fused", False))
    num_params = sum(p.numel() for p in model.parameters())
    parts = (_KEY_VERSION, torch.__version__, batch, imgsz, training, fused, num_params)
    for part in (*parts, type(model).__qualname__, repr(model)):
        digest.update(f"{part}\0".encode())
    try:
        for path in sources:
            digest.update(path.read_bytes())
    except OSError:  # a source gone or unreadable since its import: count, do not key
        return None
    return digest.hexdigest()[:32]


def _class_sources(model: nn.Module) -> list[Path] | None:
    """The files defining `model`'s non-torch module classes, and the counter's own."""
    names = {type(module).__module__ for module in model.modules()}
    names = {name for name in names if name.split(".")[0] != "torch"}
    files: set[Path] = {Path(flop_count.__file__)}
    for name in names:
        file = getattr(sys.modules.get(name), "__file__", None)
        if not file or not Path(file).is_file():
            return None
        files.add(Path(file))
    return sorted(files)


class _Entry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    forward_flops: int
    backward_flops: int | None
    batch: int
    imgsz: int
    count_ms: float

    def sound(self) -> bool:
        backward = [] if self.backward_flops is None else [self.backward_flops]
        counts = [self.forward_flops, *backward]
        sizes = [self.batch, self.imgsz]
        return all(0 < n <= MAX_FLOPS for n in counts) and all(n > 0 for n in sizes)


def _entries() -> dict[str, _Entry]:
    """The cache's well-formed entries, oldest first; anything else is left out."""
    found: dict[str, _Entry] = {}
    for key, value in read_entries(CACHE_NAME).items():
        try:
            entry = msgspec.convert(value, _Entry, strict=True)
        except msgspec.ValidationError:
            continue
        if entry.sound() and 0 <= entry.count_ms < MAX_COUNT_MS:
            found[key] = entry
    return found


def cached_count(key: str, *, batch: int, imgsz: int) -> FlopCount | None:
    """The stored count under `key` when it is well formed and for this input, else None."""
    entry = _entries().get(key)
    if entry is None or (entry.batch, entry.imgsz) != (batch, imgsz):
        return None
    return FlopCount(
        forward=entry.forward_flops,
        backward=entry.backward_flops,
        batch=batch,
        imgsz=imgsz,
        count_ms=entry.count_ms,
    )


def store_count(key: str, count: FlopCount) -> None:
    """`count` kept under `key`, after the newest `MAX_ENTRIES - 1` good entries already there."""
    entries = {k: v for k, v in _entries().items() if k != key}
    kept: dict[str, object] = {
        k: msgspec.to_builtins(v) for k, v in list(entries.items())[-(MAX_ENTRIES - 1) :]
    }
    kept[key] = {
        "forward_flops": count.forward,
        "backward_flops": count.backward,
        "batch": count.batch,
        "imgsz": count.imgsz,
        "count_ms": count.count_ms,
    }
    write_entries(CACHE_NAME, kept, sort_keys=False)  # insertion order: oldest first
