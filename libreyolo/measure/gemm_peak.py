"""The measured achievable peak: a short calibrated GEMM in the window's math dtype.

Role: on the measured device, multiply two n x n matrices in the dtype the window's
convolutions ran in (`fp32`, `tf32`, `fp16`, `bf16`), as many multiplies per run as make it
last `MIN_RUN_S`, and keep the best of `NUM_RUNS` runs as 2 n^3 FLOPs per multiply over its
time: what this device really reaches on the friendliest dense kernel, on every device the
datasheet table does not know (every CPU). Bounded: a small probe GEMM sizes n (a slow device
keeps the probe's side) and no run starts after `BUDGET_S`, sizing included. The host sampler
watches the calibration's own threads; one that waited for a CPU (another process busy) is
kept for this profile, flagged `contended`, and never cached.

The result is cached per machine (host name and device), dtype, intra-op thread count and
torch version in `$LIBREYOLO_CACHE_DIR/gemm_peaks.json` (default `~/.cache/libreyolo`), so a
sweep calibrates once; the newest `MAX_ENTRIES` are kept. The cache is written atomically;
one that cannot be read, parsed or trusted is ignored and rewritten, never fatal. A cached
peak is a claim about this device, so each use checks it against one short probe GEMM run now
(`spot_tflops`, tens of milliseconds): a peak below `SPOT_AGREES[0]` of what the probe
reaches, or above `SPOT_AGREES[1]` times it, is not this device's (an edited file gave MFU
8,484 %), and the device is calibrated again, with a note.

Must not: run inside the measured window, or decide what the peak means (analysis does).
"""

from __future__ import annotations

import contextlib
import math
import platform
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from libreyolo.analysis.contention import CPU_WAIT_FRAC_CONTENDED
from libreyolo.cache_file import cache_dir, read_entries, write_entries
from libreyolo.document.model import Peak
from libreyolo.measure.device import synchronize
from libreyolo.measure.host import HostSampler

CACHE_NAME = "gemm_peaks.json"
# Machines x devices x dtypes x thread counts x torch versions (a home folder shared by a
# cluster's nodes holds each node's): at a few hundred bytes each, the newest 512 stay well
# under the cache file's cap, past which the whole file would be ignored.
MAX_ENTRIES = 512
BUDGET_S = 1.5  # the whole calibration, sizing included
MIN_RUN_S = 0.05  # a run shorter than this is too close to the timer's resolution
NUM_RUNS = 5
# n: big enough to reach the dense peak, small enough to fit any device and the budget.
SIDE = {"cpu": 2048, "cuda": 8192}
# The first GEMMs, the warm-up and the probe that sizes the rest: 2 GFLOP, milliseconds on any
# device this runs on, so a slow one cannot spend the budget before the runs begin.
PROBE_SIDE = 1024
SIDE_SHARE = 1 / 3  # one GEMM of the full side may take this share of the budget, else the probe's
# A cached peak agrees with the probe GEMM run now when it lies within these multiples of the
# probe's rate: the probe's side reaches less than the peak, never much more; a busy host only
# lowers it (then the check passes, or calibrates again, which is never wrong).
SPOT_AGREES = (0.8, 20.0)
SPOT_RUN_S = 0.01  # the probe's timed run
DTYPES = {
    "fp32": torch.float32,
    "tf32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
}


@dataclass(frozen=True, slots=True)
class GemmRun:
    """The best run of one calibration."""

    tflops: float
    side: int
    num_runs: int
    calibration_ms: float
    contended: bool

    def reference(self, dtype: str) -> str:
        return f"best of {self.num_runs} runs of {self.side}x{self.side} {dtype} GEMMs"


def cache_path() -> Path:
    return cache_dir() / CACHE_NAME


def cache_key(device: torch.device, device_name: str | None, dtype: str) -> str:
    """One machine, device, dtype, thread count and torch: what the GEMM's speed depends on."""
    threads = torch.get_num_threads() if device.type == "cpu" else None
    return "|".join(
        [
            platform.node(),
            device.type,
            device_name or "unknown",
            dtype,
            f"threads={threads}",
            f"torch={torch.__version__}",
        ]
    )


def measured_peak(
    device: torch.device, device_name: str | None, dtype: str, notes: list[str] | None = None
) -> Peak:
    """The cached peak of this machine, device and dtype when a probe GEMM run now agrees
    with it, else a calibration now (cached when the host left it alone; `notes` says why a
    cached one was not used)."""
    key = cache_key(device, device_name, dtype)
    cached = _read_cache().get(key)
    if cached is not None:
        tflops, reference = cached
        probe = spot_tflops(device, dtype)
        if SPOT_AGREES[0] * probe <= tflops <= SPOT_AGREES[1] * probe:
            return Peak(
                source="measured", dtype=dtype, tflops=tflops, reference=reference, cached=True
            )
        if notes is not None:
            notes.append(
                f"the cached {dtype} GEMM peak ({tflops:.4g} TFLOP/s) disagrees with a probe "
                f"GEMM run now ({probe:.4g} TFLOP/s): measured again"
            )
    run = calibrate(device, dtype)
    peak = Peak(
        source="measured",
        dtype=dtype,
        tflops=run.tflops,
        reference=run.reference(dtype),
        cached=False,
        calibration_ms=run.calibration_ms,
        contended=run.contended,
    )
    if not run.contended:
        _write_cache(key, peak)
    return peak


@contextlib.contextmanager
def _matmul_precision(device: torch.device, dtype: str) -> Iterator[None]:
    """fp32 GEMMs on CUDA in TF32 exactly when `dtype` says so; restored after."""
    if device.type != "cuda":
        yield
        return
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def calibrate(device: torch.device, dtype: str, *, budget_s: float = BUDGET_S) -> GemmRun:
    """The best TFLOP/s of n x n GEMMs in `dtype` on `device` within `budget_s` (the run under
    way at the deadline finishes: one run's slack)."""
    started = time.perf_counter()
    deadline = started + budget_s
    sampler = HostSampler(intra_op_threads=torch.get_num_threads)
    with torch.inference_mode(), _matmul_precision(device, dtype):
        a, b = _operands(PROBE_SIDE, device, dtype)
        _timed(a, b, 1, device)  # the warm-up: first calls pay for setup
        one = _timed(a, b, 1, device)
        side = _side(device, one, budget_s)
        if side != PROBE_SIDE:
            a, b = _operands(side, device, dtype)
            one = _timed(a, b, 1, device)  # also this side's warm-up
        reps = max(1, math.ceil(MIN_RUN_S / max(one, 1e-6)))
        best, num_runs = 0.0, 0
        try:
            sampler.begin()
            while num_runs < NUM_RUNS and (num_runs == 0 or time.perf_counter() < deadline):
                seconds = _timed(a, b, reps, device)
                best = max(best, 2 * side**3 * reps / seconds / 1e12)
                num_runs += 1
            host = sampler.end()
        finally:
            sampler.window()  # closes its descriptors, also when a GEMM raised
    return GemmRun(
        tflops=round(best, 4),
        side=side,
        num_runs=num_runs,
        calibration_ms=round((time.perf_counter() - started) * 1000, 1),
        contended=_waited(host.cpu_ms, host.cpu_wait_ms),
    )


def spot_tflops(device: torch.device, dtype: str) -> float:
    """What one probe-side GEMM reaches on `device` now: the check of a cached peak."""
    with torch.inference_mode(), _matmul_precision(device, dtype):
        a, b = _operands(PROBE_SIDE, device, dtype)
        one = _timed(a, b, 1, device)  # also the warm-up
        reps = max(1, math.ceil(SPOT_RUN_S / max(one, 1e-6)))
        seconds = _timed(a, b, reps, device)
    return 2 * PROBE_SIDE**3 * reps / seconds / 1e12


def _side(device: torch.device, probe_s: float, budget_s: float) -> int:
    """The device's GEMM side when one GEMM of it, estimated from the probe's time (n^3
    work), fits `SIDE_SHARE` of the budget; else the probe's side."""
    side = SIDE.get(device.type, SIDE["cpu"])
    return side if probe_s * (side / PROBE_SIDE) ** 3 <= budget_s * SIDE_SHARE else PROBE_SIDE


def _operands(side: int, device: torch.device, dtype: str) -> tuple[torch.Tensor, torch.Tensor]:
    return (
        torch.randn(side, side, device=device, dtype=DTYPES[dtype]),
        torch.randn(side, side, device=device, dtype=DTYPES[dtype]),
    )


def _waited(cpu_ms: float | None, wait_ms: float | None) -> bool:
    """Whether the calibration's threads spent the contention share of their time waiting."""
    if cpu_ms is None or wait_ms is None or cpu_ms + wait_ms <= 0:
        return False
    return wait_ms / (cpu_ms + wait_ms) >= CPU_WAIT_FRAC_CONTENDED


def _timed(a: torch.Tensor, b: torch.Tensor, reps: int, device: torch.device) -> float:
    synchronize(device)
    start = time.perf_counter()
    for _ in range(reps):
        torch.mm(a, b)
    synchronize(device)
    return time.perf_counter() - start


def _read_cache() -> dict[str, tuple[float, str]]:
    """The cache's well-formed entries; anything malformed is left out."""
    entries: dict[str, tuple[float, str]] = {}
    for key, entry in read_entries(CACHE_NAME).items():
        if not isinstance(entry, dict):
            continue
        tflops, reference = entry.get("tflops"), entry.get("reference")
        if isinstance(tflops, bool) or not isinstance(tflops, int | float):
            continue
        if 0 < tflops < math.inf and isinstance(reference, str):
            entries[key] = (float(tflops), reference[:200])
    return entries


def _write_cache(key: str, peak: Peak) -> None:
    """This entry added after the newest `MAX_ENTRIES - 1` good ones (oldest first)."""
    kept = [(k, v) for k, v in _read_cache().items() if k != key][-(MAX_ENTRIES - 1) :]
    entries: dict[str, object] = {k: {"tflops": t, "reference": r} for k, (t, r) in kept}
    entries[key] = {"tflops": peak.tflops, "reference": peak.reference}
    write_entries(CACHE_NAME, entries, sort_keys=False)  # insertion order: oldest first
