"""The NVML energy meter, without a GPU: a fake `pynvml` with a scripted counter and clock, the
torch-side device properties injected. Every path balances NVML's init with its shutdown."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from types import SimpleNamespace

import jsonschema
import pytest
import torch

from libreyolo.analysis.build import finalize
from libreyolo.document.codec import from_builtins, to_builtins
from libreyolo.document.model import Compute, Energy, Profile, RunInfo, Samples, StepSample, Tool
from libreyolo.measure.energy import (
    EnergyMeter,
    EnergyReading,
    GpuIdentity,
    energy_meter,
    window_energy,
)

UUID = "GPU-6f1c0a2e-1d2b-4c3d-8e4f-5a6b7c8d9e0f"
BUS = "00000000:17:00.0"
H200 = GpuIdentity(uuid=UUID, pci_bus_id=BUS)
START_MJ = 1_000_000_000  # mJ since the driver loaded
TWO_S_AT_300_W = (START_MJ, START_MJ + 600_000)  # 600 J


class NVMLError(Exception):
    """pynvml's: its text is nvmlErrorString's ("Not Supported")."""


class NVMLError_NotSupported(NVMLError):
    """pynvml's spelling: what a GPU without the counter (before Volta) raises."""


class FakeNvml:
    """The few pynvml calls the meter makes; `failing` names the calls that raise."""

    NVMLError = NVMLError
    NVMLError_NotSupported = NVMLError_NotSupported
    NVML_CLOCK_SM = 1

    def __init__(
        self,
        counter_mj: Sequence[int] = TWO_S_AT_300_W,
        *,
        known: Sequence[str] = (UUID, BUS),
        failing: dict[str, NVMLError] | None = None,
    ) -> None:
        self.counter: Iterator[int] = iter(counter_mj)
        self.known = set(known)
        self.failing = failing or {}
        self.num_inits = self.num_shutdowns = 0
        self.looked_up: list[str] = []

    def _call(self, name: str) -> None:
        if name in self.failing:
            raise self.failing[name]

    def nvmlInit(self) -> None:
        self._call("nvmlInit")
        self.num_inits += 1

    def nvmlShutdown(self) -> None:
        self.num_shutdowns += 1

    def _handle(self, key: str) -> tuple[str, str]:
        self.looked_up.append(key)
        if key not in self.known:
            raise NVMLError("Not Found")
        return ("handle", key)

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> tuple[str, str]:
        return self._handle(uuid)

    def nvmlDeviceGetHandleByPciBusId(self, bus: str) -> tuple[str, str]:
        return self._handle(bus)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: tuple[str, str]) -> int:
        self._call("nvmlDeviceGetTotalEnergyConsumption")
        return next(self.counter)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: tuple[str, str]) -> int:
        self._call("nvmlDeviceGetEnforcedPowerLimit")
        return 700_000  # mW

    def nvmlDeviceGetClockInfo(self, handle: tuple[str, str], clock: int) -> int:
        assert clock == self.NVML_CLOCK_SM
        return 1980

    def nvmlDeviceGetName(self, handle: tuple[str, str]) -> str:
        return "NVIDIA H200"


def _clock(*seconds: float) -> object:
    return iter(seconds).__next__


def _meter(
    monkeypatch: pytest.MonkeyPatch,
    nvml: FakeNvml | None,
    *,
    seconds: tuple[float, float] = (10.0, 12.0),
    gpu: GpuIdentity = H200,
) -> tuple[EnergyReading | None, str | None]:
    """One window, start to stop, with `nvml` as pynvml (None: not installed)."""
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    meter = EnergyMeter(gpu, clock=_clock(*seconds))  # type: ignore[arg-type]
    meter.start()
    result = meter.stop()
    meter.close()  # the loop's way out: a second shutdown must not happen
    if nvml is not None:
        assert nvml.num_shutdowns == nvml.num_inits
    return result


def test_a_2_s_window_at_300_w_reads_600_j_and_the_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nvml = FakeNvml()
    reading, note = _meter(monkeypatch, nvml)
    assert note is None
    assert reading == EnergyReading(
        joules=600.0, window_ms=2000.0, power_limit_w=700.0, sm_clock_mhz=1980, gpu="NVIDIA H200"
    )
    assert nvml.looked_up == [UUID] and (nvml.num_inits, nvml.num_shutdowns) == (1, 1)


def test_a_gpu_nvml_cannot_find_by_uuid_is_found_by_its_pci_bus_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nvml = FakeNvml(known=(BUS,))  # a MIG instance's UUID is no GPU's
    reading, note = _meter(monkeypatch, nvml)
    assert note is None and reading is not None and reading.joules == 600.0
    assert nvml.looked_up == [UUID, BUS]


def test_a_power_limit_nvml_does_not_report_leaves_the_figure_standing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nvml = FakeNvml(failing={"nvmlDeviceGetEnforcedPowerLimit": NVMLError_NotSupported("x")})
    reading, note = _meter(monkeypatch, nvml)
    assert note is None and reading is not None
    assert (reading.joules, reading.power_limit_w) == (600.0, None)


NOT_MEASURED = "energy not measured: NVML"
ENERGY_CALL = "nvmlDeviceGetTotalEnergyConsumption"
REFUSALS: dict[str, tuple[Callable[[], FakeNvml | None], tuple[float, float], str]] = {
    "not installed": (
        lambda: None,
        (10.0, 12.0),
        "energy not measured: install the energy extra (pip install 'libreyolo[energy]')",
    ),
    "no driver": (
        lambda: FakeNvml(failing={"nvmlInit": NVMLError("Driver Not Loaded")}),
        (10.0, 12.0),
        f"{NOT_MEASURED} did not initialise (Driver Not Loaded)",
    ),
    "no such GPU": (
        lambda: FakeNvml(known=()),
        (10.0, 12.0),
        f"{NOT_MEASURED} finds no GPU {UUID} or {BUS} (Not Found)",
    ),
    "pre-Volta": (
        lambda: FakeNvml(failing={ENERGY_CALL: NVMLError_NotSupported("Not Supported")}),
        (10.0, 12.0),
        f"{NOT_MEASURED} cannot read this GPU's total-energy counter "
        "(Not Supported; Volta and newer have one)",
    ),
    "0.42 s": (
        FakeNvml,
        (10.0, 10.42),
        "energy not reported: the window's unsynced iterations lasted 0.42 s, under the ~1 s "
        "NVML's energy counter can resolve; measure more --runs/--steps",
    ),
    "backwards": (
        lambda: FakeNvml((5_000, 4_000)),
        (10.0, 12.0),
        "energy not reported: NVML's energy counter went backwards over the window "
        "(5000 mJ, then 4000 mJ: was the driver reloaded?)",
    ),
    "still": (
        lambda: FakeNvml((5_000, 5_000)),
        (10.0, 12.0),
        "energy not reported: NVML's energy counter did not move over the window's 2.00 s "
        "(it read 5000 mJ at both ends)",
    ),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_each_refusal_gives_no_reading_and_its_one_note(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    make, seconds, expected = REFUSALS[case]
    nvml = make()
    assert _meter(monkeypatch, nvml, seconds=seconds) == (None, expected)
    if nvml is not None:  # _meter checked that every init was shut down
        assert nvml.num_inits == (0 if case == "no driver" else 1)


def test_a_window_that_failed_before_stop_is_shut_down_by_close(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nvml = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    meter = EnergyMeter(H200, clock=_clock(10.0))  # type: ignore[arg-type]
    meter.start()
    meter.close()
    meter.close()
    assert (nvml.num_inits, nvml.num_shutdowns) == (1, 1)
    assert meter.stop() == (None, "energy not reported: NVML was shut down before stop()")


def test_the_meter_asks_nvml_for_the_torch_device_by_uuid_and_bus_never_by_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    props = SimpleNamespace(
        uuid=UUID.removeprefix("GPU-"), pci_domain_id=0, pci_bus_id=0x17, pci_device_id=0
    )
    asked: list[object] = []
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: asked.append(d) or props)
    meter = energy_meter(torch.device("cuda", 1))
    assert meter is not None and meter.gpu == H200
    assert asked == [torch.device("cuda", 1)]
    assert energy_meter(torch.device("cpu")) is None and len(asked) == 1
    older = SimpleNamespace(uuid=UUID)  # a torch without the PCI fields, a UUID already prefixed
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: older)
    meter = energy_meter(torch.device("cuda", 0))
    assert meter is not None and meter.gpu == GpuIdentity(uuid=UUID, pci_bus_id=None)


def _profile(energy: Energy) -> Profile:
    """A finalized 2-step training profile at batch 8 on CUDA whose window drew `energy`."""
    steps = [StepSample(index=i, synced=False, wall_ms=25.0) for i in range(2)]
    return finalize(
        Profile(
            kind="train",
            created=None,
            tool=Tool(version="test"),
            run=RunInfo(mode="training", device="cuda:0", batch=8, imgsz=640),
            samples=Samples(steps=steps),
            compute=Compute(math_dtype="tf32", energy=energy),
        )
    )


def test_the_reading_becomes_the_profiles_energy_and_its_metrics(
    monkeypatch: pytest.MonkeyPatch, schema_validator: jsonschema.Draft202012Validator
) -> None:
    reading, _ = _meter(monkeypatch, FakeNvml())
    assert window_energy(None, 16) is None
    energy = window_energy(reading, 16)  # batch 8 x 2 unsynced steps
    assert energy == Energy(
        joules=600.0,
        window_ms=2000.0,
        num_images=16,
        power_limit_w=700.0,
        sm_clock_mhz=1980,
        gpu="NVIDIA H200",
    )
    profile = _profile(energy)
    metrics = {key: profile.metrics[key] for key in ENERGY_KEYS}
    assert metrics == {
        "energy_j_per_img": 37.5,  # 600 J / 16 images
        "img_per_j": 0.02667,
        "mean_power_w": 300.0,
        "power_limit_w": 700.0,
    }
    raw = to_builtins(profile)
    schema_validator.validate(raw)
    assert from_builtins(raw, origin="test").compute == profile.compute


ENERGY_KEYS = ("energy_j_per_img", "img_per_j", "mean_power_w", "power_limit_w")
