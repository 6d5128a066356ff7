"""A run's `Compute` record: the window's math dtype, its device's peaks and FLOPs per image.

Role: the two collectors call `device_peaks` before loading the model (the calibration GEMM
must not leave its memory in the window's allocator peaks) and `count_model_flops` once the
model is built, both before the window; `compute_record` joins them. What cannot be had (a
family whose forward fails on fake tensors, a calibration that fails) is noted and stays null:
a profile says "unknown", never 0.

Must not: run inside the measured window, or derive achieved FLOP/s or MFU (analysis does).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from libreyolo.cache_file import cache_problem
from libreyolo.document.model import Flops, Peak
from libreyolo.measure.flop_bounds import implausible
from libreyolo.measure.flop_cache import cached_count, flop_key, store_count
from libreyolo.measure.flop_count import FlopCount, count_flops
from libreyolo.measure.gemm_peak import measured_peak
from libreyolo.measure.peak_table import table_peak

AMPERE = (8, 0)  # the first compute capability whose tensor cores run TF32


class CountKey(NamedTuple):
    """What a FLOP count depends on within one process: the architecture (its class and
    parameter count, which the size and classes decide), the input and the mode."""

    model: str
    num_params: int
    batch: int
    imgsz: int
    training: bool
    fused: bool


# One count per key per process (`--repeat` trials), whether the machine's cache is writable
# or not; `flop_cache` keeps them across processes under a stricter key.
_COUNTS: dict[CountKey, tuple[FlopCount, bool]] = {}


def math_dtype(device: torch.device, autocast: torch.dtype | None) -> str:
    """The dtype the window's convolutions run in: the autocast dtype when AMP took effect,
    TF32 for float32 on a CUDA device with TF32 tensor cores when cuDNN allows it (torch's
    default), else fp32."""
    if autocast is not None and device.type == "cuda":
        return "bf16" if autocast == torch.bfloat16 else "fp16"
    tf32 = device.type == "cuda" and torch.backends.cudnn.allow_tf32
    if tf32 and torch.cuda.get_device_capability(device) >= AMPERE:
        return "tf32"
    return "fp32"


def device_peaks(
    device: torch.device, device_name: str | None, dtype: str, notes: list[str]
) -> list[Peak]:
    """The datasheet peak (known GPUs) and the measured GEMM peak of `device` in `dtype`."""
    peaks: list[Peak] = []
    problem = cache_problem()
    if problem is not None:  # every run says it: nothing cached was used or kept
        notes.append(problem)
    if device.type == "cuda":
        row = table_peak(device_name, dtype)
        if row is not None:
            peaks.append(Peak(source="table", dtype=dtype, tflops=row[1], reference=row[0].source))
        else:
            notes.append(
                f"no datasheet peak for {device_name or 'this GPU'} in {dtype}: "
                "MFU is against the measured GEMM peak only"
            )
    try:
        peak = measured_peak(device, device_name, dtype, notes)
    except (RuntimeError, ValueError) as err:  # out of memory, an unsupported dtype
        notes.append(f"GEMM peak not measured: {_one_line(err)}")
        return peaks
    finally:
        if device.type == "cuda":
            torch.cuda.empty_cache()  # the GEMM's operands are not the window's memory
    if peak.contended:
        notes.append(
            "the GEMM peak was measured while another process took CPU time: it reads low "
            "and MFU against it high; not cached, measure again on a quiet host"
        )
    peaks.append(peak)
    return peaks


def count_model_flops(
    model: nn.Module, *, batch: int, imgsz: int, training: bool, notes: list[str]
) -> Flops | None:
    """FLOPs per image of `model` (in its current train/eval mode) at this input, counted once
    per machine (`flop_cache`); None and a note when the family's forward cannot run on fake
    tensors."""
    key = CountKey(
        model=type(model).__qualname__,
        num_params=sum(p.numel() for p in model.parameters()),
        batch=batch,
        imgsz=imgsz,
        training=training,
        fused=bool(getattr(model, "is_fused", False)),
    )
    if key not in _COUNTS:  # a later trial of this process neither hashes nor reads again
        disk_key = flop_key(model, batch=batch, imgsz=imgsz, training=training)
        stored = None if disk_key is None else cached_count(disk_key, batch=batch, imgsz=imgsz)
        why = None if stored is None else implausible(model, stored)
        if stored is not None and why is None:
            _COUNTS[key] = (stored, True)
        else:
            try:
                counted = count_flops(model, batch=batch, imgsz=imgsz, training=training)
            except Exception as err:  # any failure of a family's forward on fake tensors
                notes.append(f"FLOPs not counted: {type(err).__name__}: {_one_line(err)}")
                return None
            wrong = stored is not None and (stored.forward, stored.backward) != (
                counted.forward,
                counted.backward,
            )
            if wrong:  # the entry, not the bounds: say so
                notes.append(f"the machine cache's FLOP count was not used ({why}): counted again")
            if disk_key is not None:
                store_count(disk_key, counted)
            _COUNTS[key] = (counted, False)
    count, cached = _COUNTS[key]
    forward = count.forward / batch
    backward = None if count.backward is None else count.backward / batch
    return Flops(
        per_image=forward + (backward or 0.0),
        forward_per_image=forward,
        backward_per_image=backward,
        batch=batch,
        imgsz=imgsz,
        count_ms=count.count_ms,
        cached=cached,
    )


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text[:200] or type(err).__name__
