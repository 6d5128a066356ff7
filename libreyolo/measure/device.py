"""`--device` parsing and the device sync used by synced iterations.

Role: turn a device string into a `torch.device` that exists on this machine, before any model
is loaded, so a bad value is a one-line exit-2 error rather than a torch traceback (libreyolo
1.6.0 moved the model to `cuda:0` for its default `--device 0` on a machine without CUDA, and
exited 1 with torch's traceback). Must not fall back silently to another device, load models, or
time anything.
"""

from __future__ import annotations

import torch

from libreyolo.errors import UsageError

_CPU_HINT = "use --device cpu"


def resolve_device(spec: str | int) -> torch.device:
    """`"0"` -> cuda:0, `"cpu"`, `"cuda"`, `"cuda:N"`, `"mps"`; UsageError when unusable."""
    text = str(spec).strip().lower()
    if not text:
        raise UsageError("--device is empty", hint="use --device cpu or --device 0")
    if "," in text:
        raise UsageError(
            f"--device {spec} names several devices; profiling measures one",
            hint="pass a single device such as --device 0",
        )
    if text.isdigit():
        text = f"cuda:{text}"
    try:
        device = torch.device(text)
    except (RuntimeError, ValueError) as err:
        raise UsageError(f"invalid --device {spec!r}: {err}", hint=_CPU_HINT) from err
    if device.type == "cuda":
        return _check_cuda(device, spec)
    if device.type == "mps" and not (
        getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()
    ):
        raise UsageError(f"--device {spec} needs MPS, but torch finds none", hint=_CPU_HINT)
    if device.type not in {"cpu", "cuda", "mps"}:
        raise UsageError(f"unsupported --device {spec!r}", hint="use --device cpu or --device 0")
    return device


def _check_cuda(device: torch.device, spec: str | int) -> torch.device:
    if not torch.cuda.is_available():
        raise UsageError(
            f"--device {spec} needs CUDA, but torch finds no CUDA device", hint=_CPU_HINT
        )
    index = device.index if device.index is not None else torch.cuda.current_device()
    count = torch.cuda.device_count()
    if index >= count:
        raise UsageError(
            f"--device {spec}: no CUDA device {index} (torch sees {count})",
            hint=f"use --device 0..{count - 1}",
        )
    return torch.device("cuda", index)


def select_device(device: torch.device) -> None:
    """Make a CUDA `device` the current one before anything touches CUDA: what torch places
    without an explicit device (the CUDA context a pin or loader thread starts, cuBLAS and
    cuDNN handles, `torch.cuda.*` calls without an index, CUPTI's setup) then lands on it,
    not on GPU 0, where another job may be measuring. A no-op off CUDA."""
    if device.type == "cuda":
        torch.cuda.set_device(device)


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work; a no-op on the CPU, whose ops complete in order."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()  # 1.6.0 synced CUDA only: its MPS walls missed queued work


def device_label(device: torch.device) -> str:
    """The device string recorded in the profile (`cpu`, `cuda:0`, `mps`)."""
    return str(device)
