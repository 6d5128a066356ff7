"""The measured GEMM peak: bounded in time, cached per machine, dtype and thread count, a
hostile cache ignored and rewritten (never fatal), a contended calibration not cached, and
`device_peaks` putting it in a run's peaks with the notes a reader needs."""

from __future__ import annotations

import functools
import json
import math
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from libreyolo.cache_file import CACHE_DIR_ENV, CACHE_MAX_BYTES
from libreyolo.document.model import Peak
from libreyolo.measure import compute, gemm_peak
from libreyolo.measure.compute import device_peaks
from libreyolo.measure.gemm_peak import (
    MAX_ENTRIES,
    MIN_RUN_S,
    GemmRun,
    cache_key,
    cache_path,
    calibrate,
    measured_peak,
)
from tests.cache_entries import plant, stored
from tests.quiet import quietly

CPU = torch.device("cpu")
SMALL_BUDGET_S = 0.1  # a fifteenth of the default: a peak in milliseconds, and a tight bound
real_calibrate = calibrate


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of this test's own: nothing another test or session measured."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(CACHE_DIR_ENV, str(folder))
    return folder


class Calls:
    """A stand-in for `calibrate` that counts its calls and measures nothing."""

    def __init__(self, contended: bool = False) -> None:
        self.num_calls = 0
        self.contended = contended

    def __call__(self, device: torch.device, dtype: str) -> GemmRun:
        self.num_calls += 1
        return GemmRun(
            tflops=0.125, side=64, num_runs=5, calibration_ms=3.0, contended=self.contended
        )


SPOT_TFLOPS = 0.1  # what the stand-in probe GEMM reaches: Calls' 0.125 agrees with it


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    fake = Calls()
    monkeypatch.setattr(gemm_peak, "calibrate", fake)
    monkeypatch.setattr(gemm_peak, "spot_tflops", lambda device, dtype: SPOT_TFLOPS)
    return fake


def _contention(run: GemmRun) -> str | None:
    return "the calibration's threads waited for a CPU" if run.contended else None


@pytest.fixture
def one_thread() -> Iterator[None]:
    """One intra-op thread: the bound holds at any count, and one thread waits for a CPU far
    less often on a shared host, where a contended run is measured again."""
    original = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(original)


def test_a_small_budget_holds_within_one_run_of_slack(one_thread: None) -> None:
    def measure() -> tuple[GemmRun, float]:
        started = time.perf_counter()
        run = real_calibrate(CPU, "fp32", budget_s=SMALL_BUDGET_S)
        return run, time.perf_counter() - started

    run, elapsed_s = quietly(measure, lambda measured: _contention(measured[0]))
    assert run.tflops > 0
    assert 1 <= run.num_runs <= gemm_peak.NUM_RUNS
    one_gemm_s = 2 * run.side**3 / (run.tflops * 1e12)
    one_run_s = MIN_RUN_S + one_gemm_s  # runs repeat the GEMM until they last MIN_RUN_S
    assert elapsed_s <= SMALL_BUDGET_S + 1.5 * one_run_s, (elapsed_s, run)
    assert run.calibration_ms == pytest.approx(elapsed_s * 1000, abs=20)


def test_the_peak_is_cached_and_read_back_without_calibrating(calls: Calls) -> None:
    first = measured_peak(CPU, "a CPU", "fp32")
    assert (first.source, first.dtype, first.tflops, first.cached) == (
        "measured",
        "fp32",
        0.125,
        False,
    )
    assert first.calibration_ms == 3.0
    assert first.contended is False
    assert first.reference == "best of 5 runs of 64x64 fp32 GEMMs"
    second = measured_peak(CPU, "a CPU", "fp32")
    assert calls.num_calls == 1
    assert (second.tflops, second.reference, second.cached) == (0.125, first.reference, True)
    assert second.calibration_ms is None
    measured_peak(CPU, "a CPU", "bf16")  # another dtype is another entry
    assert calls.num_calls == 2
    assert sorted(stored(cache_path().name)) == sorted(
        [cache_key(CPU, "a CPU", "fp32"), cache_key(CPU, "a CPU", "bf16")]
    )


def test_the_thread_count_is_part_of_the_key(calls: Calls, two_threads: None) -> None:
    at_two = cache_key(CPU, "a CPU", "fp32")
    measured_peak(CPU, "a CPU", "fp32")
    torch.set_num_threads(1)
    assert cache_key(CPU, "a CPU", "fp32") != at_two
    assert "threads=1" in cache_key(CPU, "a CPU", "fp32")
    assert measured_peak(CPU, "a CPU", "fp32").cached is False
    assert calls.num_calls == 2


def _plant_bytes(path: Path, content: bytes) -> None:
    """`content` as the cache file: sealed when it is an object of entries (so the peak's own
    checks judge them), else as raw bytes (not the cache's at all)."""
    try:
        parsed = json.loads(content)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict) and len(content) <= CACHE_MAX_BYTES:
        plant(path.name, parsed)
    else:
        path.write_bytes(content)


def _entry(tflops: object) -> bytes:
    key = cache_key(CPU, "a CPU", "fp32")
    return json.dumps({key: {"tflops": tflops, "reference": "planted"}}).encode()


HOSTILE = {
    "not-json": b"{ this is not json",
    "not-utf8": b"\xff\xfe\x00{",
    "a-list": b"[1, 2, 3]",
    "a-number": b"42",
    "entry-not-a-dict": json.dumps({cache_key(CPU, "a CPU", "fp32"): 7.5}).encode(),
    "string-tflops": _entry("fast"),
    "nan-tflops": _entry(math.nan),
    "negative-tflops": _entry(-1.0),
    "zero-tflops": _entry(0),
    "bool-tflops": _entry(True),
    "inf-tflops": _entry(math.inf),
    "no-reference": json.dumps({cache_key(CPU, "a CPU", "fp32"): {"tflops": 1.0}}).encode(),
    "two-megabytes": b" " * (2 << 20) + _entry(1.0),
    "nested-too-deep": b"[" * 200_000 + b"]" * 200_000,
}


@pytest.mark.parametrize("content", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_cache_file_is_ignored_and_rewritten(calls: Calls, content: bytes) -> None:
    path = cache_path()
    path.parent.mkdir(parents=True)
    _plant_bytes(path, content)
    peak = measured_peak(CPU, "a CPU", "fp32")
    assert (peak.tflops, peak.cached, calls.num_calls) == (0.125, False, 1)
    assert stored(path.name) == {
        cache_key(CPU, "a CPU", "fp32"): {"tflops": 0.125, "reference": peak.reference}
    }
    assert measured_peak(CPU, "a CPU", "fp32").cached is True


def test_good_entries_of_other_machines_are_kept_when_one_is_added(calls: Calls) -> None:
    path = cache_path()
    path.parent.mkdir(parents=True)
    other = {"another|cpu|x|fp32|threads=4|torch=2": {"tflops": 2.5, "reference": "theirs"}}
    plant(path.name, {**other, "bad": {"tflops": "x", "reference": "y"}})
    measured_peak(CPU, "a CPU", "fp32")
    kept = stored(path.name)
    assert set(kept) == {*other, cache_key(CPU, "a CPU", "fp32")}
    assert (
        kept["another|cpu|x|fp32|threads=4|torch=2"]
        == other["another|cpu|x|fp32|threads=4|torch=2"]
    )


def test_the_cache_keeps_the_newest_entries(calls: Calls) -> None:
    path = cache_path()
    path.parent.mkdir(parents=True)
    old = {f"host{i}|cpu|x|fp32": {"tflops": 1.0, "reference": "r"} for i in range(MAX_ENTRIES)}
    plant(path.name, old)
    measured_peak(CPU, "a CPU", "fp32")
    kept = stored(path.name)
    assert len(kept) == MAX_ENTRIES and list(kept)[-1] == cache_key(CPU, "a CPU", "fp32")
    assert "host0|cpu|x|fp32" not in kept and f"host{MAX_ENTRIES - 1}|cpu|x|fp32" in kept


def test_a_directory_where_the_cache_file_goes_is_left_alone(calls: Calls) -> None:
    cache_path().mkdir(parents=True)
    assert measured_peak(CPU, "a CPU", "fp32").tflops == 0.125
    assert measured_peak(CPU, "a CPU", "fp32").cached is False  # nothing could be cached
    assert calls.num_calls == 2
    assert cache_path().is_dir()


def test_a_fifo_where_the_cache_file_goes_does_not_block(calls: Calls) -> None:
    path = cache_path()
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    done: list[float] = []
    worker = threading.Thread(
        target=lambda: done.append(measured_peak(CPU, "a CPU", "fp32").tflops), daemon=True
    )
    worker.start()
    worker.join(10)
    if not done:  # unblock the reader left waiting, so the daemon thread can end
        with open(path, "wb"):
            pass
        pytest.fail("reading a FIFO in the cache's place blocked")
    assert done == [0.125]


def test_an_unwritable_cache_dir_still_gives_the_peak(calls: Calls, unwritable_cache: Path) -> None:
    blocker = unwritable_cache
    first = measured_peak(CPU, "a CPU", "fp32")
    assert (first.tflops, first.cached) == (0.125, False)
    assert measured_peak(CPU, "a CPU", "fp32").cached is False
    assert blocker.read_text() == "not a folder"


def test_a_contended_calibration_is_kept_flagged_never_cached_and_noted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gemm_peak, "_waited", lambda cpu_ms, wait_ms: True)
    monkeypatch.setattr(
        gemm_peak, "calibrate", functools.partial(real_calibrate, budget_s=SMALL_BUDGET_S)
    )
    notes: list[str] = []
    peaks = device_peaks(CPU, "a CPU", "fp32", notes)
    assert len(peaks) == 1
    assert (peaks[0].source, peaks[0].contended, peaks[0].cached) == ("measured", True, False)
    assert peaks[0].tflops > 0
    assert not cache_path().exists()
    assert notes == [
        "the GEMM peak was measured while another process took CPU time: it reads low "
        "and MFU against it high; not cached, measure again on a quiet host"
    ]


def test_waited_is_the_contention_share_of_the_threads_time() -> None:
    assert gemm_peak._waited(80.0, 20.0) is True  # 20 % of runnable time spent waiting
    assert gemm_peak._waited(90.0, 10.0) is False
    assert gemm_peak._waited(None, 5.0) is False  # not measurable here: not contended
    assert gemm_peak._waited(0.0, 0.0) is False


def test_device_peaks_on_the_cpu_is_one_measured_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        gemm_peak, "calibrate", functools.partial(real_calibrate, budget_s=SMALL_BUDGET_S)
    )
    notes: list[str] = []
    peaks = device_peaks(CPU, "AMD EPYC 7B13", "fp32", notes)
    assert [p.source for p in peaks] == ["measured"]
    assert peaks[0].dtype == "fp32"
    assert peaks[0].tflops > 0
    assert peaks[0].reference.startswith("best of ")
    assert all("datasheet" not in note for note in notes)


def test_a_calibration_that_raises_is_a_note_and_no_measured_peak(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fails(device: torch.device, dtype: str) -> GemmRun:
        raise RuntimeError("CUDA out of memory.\nTried to allocate 256 MiB")

    monkeypatch.setattr(gemm_peak, "calibrate", fails)
    notes: list[str] = []
    assert device_peaks(CPU, "a CPU", "fp32", notes) == []
    assert notes == ["GEMM peak not measured: CUDA out of memory. Tried to allocate 256 MiB"]


def test_a_known_gpu_gets_its_table_peak_and_an_unknown_one_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No GPU needed: the measured half is stubbed, the table half is the point."""
    monkeypatch.setattr(
        compute,
        "measured_peak",
        lambda device, name, dtype, notes: Peak(
            source="measured", dtype=dtype, tflops=700.0, reference="stub"
        ),
    )
    cuda = torch.device("cuda", 0)
    notes: list[str] = []
    peaks = device_peaks(cuda, "NVIDIA H200", "bf16", notes)
    assert [(p.source, p.tflops) for p in peaks] == [("table", 989.4), ("measured", 700.0)]
    assert notes == []
    peaks = device_peaks(cuda, "NVIDIA H200 NVL", "bf16", notes)
    assert [p.source for p in peaks] == ["measured"]
    assert notes == [
        "no datasheet peak for NVIDIA H200 NVL in bf16: MFU is against the measured GEMM peak only"
    ]


@pytest.mark.parametrize(
    ("device", "probe_s", "side"),
    [
        ("cpu", 0.05, 2048),  # 8 x 0.05 s fits a third of 1.5 s
        ("cpu", 0.07, 1024),  # a slow CPU keeps the probe's side
        ("cuda", 0.0009, 8192),  # 512 x 0.9 ms fits
        ("cuda", 0.0011, 1024),
        ("mps", 0.01, 2048),  # other devices size as the CPU does
    ],
)
def test_the_probe_sizes_the_gemm_to_a_third_of_the_budget(
    device: str, probe_s: float, side: int
) -> None:
    assert gemm_peak._side(torch.device(device), probe_s, 1.5) == side


@pytest.mark.parametrize("planted", [0.0038, 5.0], ids=["85x low: MFU 8,484 %", "50x high"])
def test_a_cached_peak_a_probe_gemm_contradicts_is_measured_again(
    calls: Calls, planted: float
) -> None:
    measured_peak(CPU, "a CPU", "fp32")
    entries = stored(cache_path().name)
    entries[cache_key(CPU, "a CPU", "fp32")]["tflops"] = planted  # type: ignore[index]
    plant(cache_path().name, entries)  # sealed: the probe GEMM is what must catch it
    notes: list[str] = []
    peak = measured_peak(CPU, "a CPU", "fp32", notes)
    assert (peak.tflops, peak.cached, calls.num_calls) == (0.125, False, 2)
    assert notes == [
        f"the cached fp32 GEMM peak ({planted:.4g} TFLOP/s) disagrees with a probe GEMM run "
        "now (0.1 TFLOP/s): measured again"
    ]
    assert stored(cache_path().name)[cache_key(CPU, "a CPU", "fp32")]["tflops"] == 0.125  # type: ignore[index]


def test_the_probe_gemm_reaches_less_than_the_peak_never_much_more(one_thread: None) -> None:
    def measure() -> tuple[GemmRun, float]:
        return real_calibrate(CPU, "fp32", budget_s=0.3), gemm_peak.spot_tflops(CPU, "fp32")

    run, spot = quietly(measure, lambda measured: _contention(measured[0]))
    low, high = gemm_peak.SPOT_AGREES
    assert low * spot <= run.tflops <= high * spot, (run.tflops, spot)
