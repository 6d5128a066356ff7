"""The GPU's energy over the window's unsynced iterations, from NVML's total-energy counter.

Role: `energy_meter(device)` gives the meter of a CUDA device (None elsewhere: a CPU has no
counter, and that needs no note). The loop calls `start()` as the first unsynced iteration
begins and `stop()` as the last one ends; `stop()` returns the reading, or None and the one note
that says why there is none. The counter (`nvmlDeviceGetTotalEnergyConsumption`, mJ since the
driver loaded, Volta and newer) is integrated: its two ends give the joules. Sampled power sees
only a fraction of a short kernel-dense window and a TDP is no measurement, so neither is used.
The counter updates every 20 to 100 ms, so a window shorter than MIN_ENERGY_WINDOW_S is refused
rather than reported. The GPU is found by its UUID, else its PCI bus id: CUDA_VISIBLE_DEVICES
renumbers torch's indices, so torch's index may name another GPU in NVML.

Must not: import pynvml before `start()` (it is the optional `energy` extra), leave NVML
initialised on any path, or raise where NVML cannot measure: the run goes on without the figure.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from libreyolo.document.model import Energy

# NVML's energy counter updates every 20 to 100 ms: under ~1 s the update phase, not the work,
# would decide a large part of the joules.
MIN_ENERGY_WINDOW_S = 1.0
NOT_INSTALLED = "energy not measured: install the energy extra (pip install 'libreyolo[energy]')"
NOT_MEASURED = "energy not measured: NVML"
NOT_REPORTED = "energy not reported"
NEVER_STARTED = f"{NOT_REPORTED}: the window never started"


@dataclass(frozen=True, slots=True)
class GpuIdentity:
    """How NVML is asked for the torch device: `GPU-<uuid>`, else the PCI bus id."""

    uuid: str | None  # "GPU-6f1c...", as NVML spells it
    pci_bus_id: str | None  # "00000000:17:00.0"


@dataclass(frozen=True, slots=True)
class EnergyReading:
    """The counter's two ends over one window, with the settings the figure holds under."""

    joules: float
    window_ms: float  # wall time between the two counter reads
    power_limit_w: float | None  # the enforced limit at the window's end; None: NVML has none
    sm_clock_mhz: int | None  # the SM clock at the window's end
    gpu: str | None  # NVML's name of the GPU

    def energy(self, num_images: int) -> Energy:
        return Energy(
            joules=self.joules,
            window_ms=self.window_ms,
            num_images=num_images,
            power_limit_w=self.power_limit_w,
            sm_clock_mhz=self.sm_clock_mhz,
            gpu=self.gpu,
        )


def window_energy(reading: EnergyReading | None, num_images: int) -> Energy | None:
    """The profile's `Energy` of a window whose metered iterations processed `num_images`."""
    return None if reading is None else reading.energy(num_images)


def torch_gpu(device: torch.device) -> GpuIdentity:
    """The identity of a CUDA `device` from torch's device properties (no NVML involved)."""
    props = torch.cuda.get_device_properties(device)
    uuid = getattr(props, "uuid", None)
    text = None if uuid is None else str(uuid)
    if text is not None and not text.startswith(("GPU-", "MIG-")):
        text = f"GPU-{text}"
    domain, bus, slot = (
        getattr(props, f"pci_{part}_id", None) for part in ("domain", "bus", "device")
    )
    known = domain is not None and bus is not None and slot is not None
    pci = f"{domain:08x}:{bus:02x}:{slot:02x}.0" if known else None
    return GpuIdentity(uuid=text, pci_bus_id=pci)


def energy_meter(device: torch.device) -> EnergyMeter | None:
    """The meter of a CUDA `device`; None for any other device."""
    return EnergyMeter(torch_gpu(device)) if device.type == "cuda" else None


class EnergyMeter:
    """NVML's total-energy counter of one GPU, read at the two ends of a window.

    NVML is initialised by `start()` and shut down by `stop()` or `close()`, whichever comes
    first (`close()` is idempotent: the loop calls it on the way out, also on failure)."""

    def __init__(self, gpu: GpuIdentity, *, clock: Callable[[], float] = time.perf_counter) -> None:
        self.gpu = gpu
        self._clock = clock
        self._nvml: Any = None  # the pynvml module while NVML is initialised
        self._handle: Any = None
        self._start_mj, self._start_s = 0, 0.0
        self._problem: str | None = NEVER_STARTED

    def start(self) -> None:
        """Initialise NVML, find the GPU and read the counter (its cost is before the window)."""
        try:
            import pynvml
        except ImportError:
            self._problem = NOT_INSTALLED
            return
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as err:
            self._problem = f"{NOT_MEASURED} did not initialise ({err})"
            return
        self._nvml = pynvml
        try:
            self._handle = find_handle(pynvml, self.gpu)
            self._start_mj = pynvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
        except (pynvml.NVMLError, LookupError) as err:
            self._problem = self._read_problem(err)
            self.close()
            return
        self._start_s = self._clock()
        self._problem = None

    def stop(self) -> tuple[EnergyReading | None, str | None]:
        """The window's reading, or None and the note saying why there is none."""
        try:
            if self._problem is not None:
                return None, self._problem
            end_s = self._clock()
            nvml = self._nvml
            try:
                end_mj = nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
            except nvml.NVMLError as err:
                return None, self._read_problem(err)
            return self._reading(end_mj, end_s)
        finally:
            self.close()

    def close(self) -> None:
        """Shut NVML down if this meter initialised it and has not shut it down yet."""
        nvml, self._nvml = self._nvml, None
        if nvml is not None:
            with contextlib.suppress(nvml.NVMLError):  # nothing left to release: the figure stands
                nvml.nvmlShutdown()
            self._problem = self._problem or f"{NOT_REPORTED}: NVML was shut down before stop()"

    def _reading(self, end_mj: int, end_s: float) -> tuple[EnergyReading | None, str | None]:
        window_s = end_s - self._start_s
        if window_s < MIN_ENERGY_WINDOW_S:
            return None, (
                f"{NOT_REPORTED}: the window's unsynced iterations lasted {window_s:.2f} s, "
                f"under the ~{MIN_ENERGY_WINDOW_S:g} s NVML's energy counter can resolve; "
                "measure more --runs/--steps"
            )
        if end_mj < self._start_mj:
            return None, (
                f"{NOT_REPORTED}: NVML's energy counter went backwards over the window "
                f"({self._start_mj} mJ, then {end_mj} mJ: was the driver reloaded?)"
            )
        if end_mj == self._start_mj:
            return None, (
                f"{NOT_REPORTED}: NVML's energy counter did not move over the window's "
                f"{window_s:.2f} s (it read {end_mj} mJ at both ends)"
            )
        nvml, handle = self._nvml, self._handle
        limit_mw = _optional(nvml, lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))
        name = _optional(nvml, lambda: nvml.nvmlDeviceGetName(handle))
        return EnergyReading(
            joules=(end_mj - self._start_mj) / 1000,
            window_ms=round(window_s * 1000, 3),
            power_limit_w=None if limit_mw is None else limit_mw / 1000,
            sm_clock_mhz=_optional(
                nvml, lambda: int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
            ),
            gpu=name.decode() if isinstance(name, bytes) else name,
        ), None

    def _read_problem(self, err: Exception) -> str:
        if self._handle is None:
            keys = " or ".join(k for k in (self.gpu.uuid, self.gpu.pci_bus_id) if k)
            return f"{NOT_MEASURED} finds no GPU {keys or 'for this device'} ({err})"
        unsupported = isinstance(err, getattr(self._nvml, "NVMLError_NotSupported", ()))
        why = "; Volta and newer have one" if unsupported else ""
        return f"{NOT_MEASURED} cannot read this GPU's total-energy counter ({err}{why})"


def find_handle(nvml: Any, gpu: GpuIdentity) -> Any:
    """NVML's handle of `gpu`: by UUID, else by PCI bus id (a MIG instance's UUID is no GPU's,
    its bus id still finds the GPU); the last lookup's NVMLError when neither finds it."""
    failure: Exception = LookupError("torch gives neither its UUID nor its PCI bus id")
    lookups = (
        (nvml.nvmlDeviceGetHandleByUUID, gpu.uuid),
        (nvml.nvmlDeviceGetHandleByPciBusId, gpu.pci_bus_id),
    )
    for lookup, key in lookups:
        if key is not None:
            try:
                return lookup(key)
            except nvml.NVMLError as err:
                failure = err
    raise failure


def _optional(nvml: Any, read: Callable[[], Any]) -> Any:
    """What `read` returns, or None where NVML cannot say (a field the GPU does not report)."""
    try:
        return read()
    except nvml.NVMLError:
        return None
