"""The host-memory pre-check of a measurement: probe the model once, read what is available.

Role: before the window, after the model is loaded, run the model's forward once on one image
at a small side (PROBE_IMGSZ, cheap) and measure its activations: for inference the peak of the
live tensors (every torch function's output tracked until its storage is freed: the forward's
true live set, the input included); for training the distinct output bytes of every leaf module
(what autograd keeps for the backward pass). Scale them to the asked size and batch
(memory_budget.py), read MemAvailable and the cgroup v2 limits around this process, and refuse
(UsageError, exit 2) a batch that cannot fit. On an accelerator the activations live on the
device (torch's own out-of-memory error covers them, exit 3), so only the host-side tensors
are checked and the probe does not run. Without /proc the check is skipped silently.

Must not: change the model (the training probe restores every buffer it updates, BatchNorm's
running statistics), keep probe tensors alive, print, or refuse on anything but the numbers.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from libreyolo.measure.memory_budget import (
    HostNeed,
    available_bytes,
    cgroup_room,
    check_fits,
    infer_need,
    parse_mem_available,
    scaled,
    train_need,
)

PROBE_IMGSZ = 64  # two strides of 32: every head level has a cell; ~0.2 s for YOLOv9-t on 1 CPU
PROC = "/proc"
CGROUP_ROOT = "/sys/fs/cgroup"  # where cgroup v2 is mounted (a v1-only host has no memory.max)


def read_available_bytes(proc: str = PROC, cgroup_root: str = CGROUP_ROOT) -> int | None:
    """Memory this process may still allocate: MemAvailable, or less where the cgroup v2
    groups around it (its own and every ancestor) leave less; None without /proc/meminfo."""
    meminfo = _read(Path(proc) / "meminfo")
    if meminfo is None:
        return None
    return available_bytes(parse_mem_available(meminfo), _cgroup_rooms(proc, cgroup_root))


def _cgroup_rooms(proc: str, cgroup_root: str) -> Iterator[int | None]:
    text = _read(Path(proc) / "self" / "cgroup") or ""
    for line in text.splitlines():
        hierarchy, _, path = line.partition("::")
        if hierarchy != "0":  # the unified (v2) hierarchy's line is `0::/path`
            continue
        group = Path(cgroup_root, path.strip().lstrip("/"))
        for folder in (group, *group.parents):
            limit = _read(folder / "memory.max")
            current = _read(folder / "memory.current")
            if limit is not None and current is not None:
                yield cgroup_room(limit, current, _read(folder / "memory.stat") or "")
            if folder == Path(cgroup_root):
                break


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None


class _LiveBytes:
    """Bytes of the distinct tensor storages seen so far that are still alive, and their peak.

    A storage's Python object lives exactly as long as the storage (torch keeps it), so a weak
    reference's callback says when its bytes are freed; views share their base's storage."""

    def __init__(self, skip: Iterable[int] = ()) -> None:
        self.live_bytes = self.peak_bytes = self.total_bytes = 0
        self._refs: dict[int, weakref.ref[Any]] = {}
        self._skip = set(skip)  # data pointers never counted (the parameters)

    def add(self, value: object) -> None:
        for tensor in _tensors(value):
            storage = tensor.untyped_storage()
            key = id(storage)
            if key in self._refs or storage.data_ptr() in self._skip:
                continue
            size = storage.nbytes()
            self._refs[key] = weakref.ref(storage, self._freed(key, size))
            self.live_bytes += size
            self.total_bytes += size
            self.peak_bytes = max(self.peak_bytes, self.live_bytes)

    def _freed(self, key: int, size: int) -> Callable[[object], None]:
        def freed(_ref: object) -> None:
            if self._refs.pop(key, None) is not None:
                self.live_bytes -= size

        return freed

    def close(self) -> None:
        self._refs.clear()  # dropped references call back no more


def _tensors(value: object) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


class _Tracked(TorchFunctionMode):
    """Counts every torch function's output (functional ops included, not only modules')."""

    def __init__(self, live: _LiveBytes) -> None:
        super().__init__()
        self.live = live

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: object,
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, object] | None = None,
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        self.live.add(out)
        return out


def peak_live_bytes(model: nn.Module, images: torch.Tensor) -> int:
    """The peak bytes of live tensors during one inference forward of `images` (counted too)."""
    live = _LiveBytes()
    try:
        with torch.inference_mode():
            live.add(images)
            with _Tracked(live):
                model(images)
        return live.peak_bytes
    finally:
        live.close()


def kept_bytes(model: nn.Module, images: torch.Tensor) -> int:
    """The distinct output bytes of every leaf module in one training forward of `images`:
    what autograd keeps for the backward pass. The model's buffers are restored after."""
    live = _LiveBytes(p.data_ptr() for p in model.parameters())
    leaves = [m for m in model.modules() if next(m.children(), None) is None]
    handles = [m.register_forward_hook(lambda _m, _i, out: live.add(out)) for m in leaves]
    try:
        with _buffers_restored(model), torch.enable_grad():
            model(images)
        return live.total_bytes
    finally:
        for handle in handles:
            handle.remove()
        live.close()


@contextmanager
def _buffers_restored(model: nn.Module) -> Iterator[None]:
    saved = [b.detach().clone() for b in model.buffers()]
    try:
        yield
    finally:
        with torch.no_grad():
            for buffer, value in zip(model.buffers(), saved, strict=True):
                buffer.copy_(value)


def probe_images(imgsz: int, device: torch.device) -> tuple[torch.Tensor, int]:
    """One random image at the probe side (or `imgsz` when smaller), and that side."""
    side = min(PROBE_IMGSZ, imgsz)
    return torch.rand(1, 3, side, side, device=device), side


def check_inference(
    model: nn.Module,
    *,
    device: torch.device,
    batch: int,
    imgsz: int,
    decoded_bytes_per_image: int = 0,
    available: int | None = None,
) -> HostNeed:
    """Refuse (UsageError) an inference batch the host cannot hold; returns the estimate.
    `available` None reads it (`read_available_bytes`)."""
    on_cpu = device.type == "cpu"
    live = 0
    if on_cpu:
        images, side = probe_images(imgsz, device)
        live = scaled(peak_live_bytes(model, images), side, imgsz)
    need = infer_need(
        imgsz,
        live_bytes_per_image=live,
        on_cpu=on_cpu,
        decoded_bytes_per_image=decoded_bytes_per_image,
    )
    check_fits(need, batch=batch, imgsz=imgsz, available=_or_read(available))
    return need


def check_training(
    model: nn.Module,
    probe: Callable[[int], torch.Tensor],
    *,
    device: torch.device,
    batch: int,
    imgsz: int,
    workers: int,
    prefetch_factor: int,
    pinned: bool,
    available: int | None = None,
) -> HostNeed:
    """Refuse (UsageError) a training batch the host cannot hold; returns the estimate.
    `probe(side)` is one image in the family's batch form at that side, on the device."""
    on_cpu = device.type == "cpu"
    kept = 0
    if on_cpu:
        side = min(PROBE_IMGSZ, imgsz)
        kept = scaled(kept_bytes(model, probe(side)), side, imgsz)
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    need = train_need(
        imgsz,
        kept_bytes_per_image=kept,
        workers=workers,
        prefetch_factor=prefetch_factor,
        pinned=pinned,
        on_cpu=on_cpu,
        param_bytes=param_bytes,
    )
    levers = ("--workers",) if workers else ()
    check_fits(need, batch=batch, imgsz=imgsz, available=_or_read(available), other_levers=levers)
    return need


def _or_read(available: int | None) -> int | None:
    return read_available_bytes() if available is None else available
