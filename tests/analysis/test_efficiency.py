"""`efficiency_metrics` on hand-built `Compute` records: achieved FLOP/s, the headline peak and
MFU against each peak, and the energy figures; unknown inputs give null, never 0."""

from __future__ import annotations

import pytest

from libreyolo.analysis.efficiency import KEYS, efficiency_metrics, headline_peak
from libreyolo.document.model import Compute, Energy, Flops, Peak

TABLE = Peak(source="table", dtype="fp16", tflops=312.0, reference="NVIDIA A100 datasheet")
MEASURED = Peak(source="measured", dtype="fp16", tflops=250.0, reference="best of 5 GEMMs")
INFER = Flops(per_image=7.8e9, forward_per_image=7.8e9, batch=1, imgsz=640, count_ms=410.0)
TRAIN = Flops(
    per_image=23.1e9,
    forward_per_image=7.8e9,
    backward_per_image=15.3e9,
    batch=8,
    imgsz=640,
    count_ms=1200.0,
)


def _compute(
    flops: Flops | None = INFER,
    peaks: tuple[Peak, ...] = (TABLE, MEASURED),
    energy: Energy | None = None,
) -> Compute:
    return Compute(math_dtype="fp16", flops=flops, peaks=list(peaks), energy=energy)


def test_achieved_is_flops_times_images_per_second_within_rounding() -> None:
    for flops, img_per_s in ((INFER, 123.4), (TRAIN, 17.0), (INFER, 0.731)):
        metrics = efficiency_metrics(_compute(flops), img_per_s)
        expected = flops.per_image * img_per_s / 1e12
        assert metrics["achieved_tflops"] == pytest.approx(expected, rel=0.01)
        assert metrics["flops_per_image"] == round(flops.per_image)


def test_headline_is_the_table_peak_when_both_exist_and_both_mfus_are_set() -> None:
    metrics = efficiency_metrics(_compute(), 1000.0)  # 7.8 TFLOP/s achieved
    assert metrics["peak_tflops"] == 312.0
    assert metrics["peak_source"] == "table"
    assert metrics["peak_table_tflops"] == 312.0
    assert metrics["peak_measured_tflops"] == 250.0
    assert metrics["mfu"] == metrics["mfu_table"] == pytest.approx(7.8 / 312.0, rel=1e-3)
    assert metrics["mfu_measured"] == pytest.approx(7.8 / 250.0, rel=1e-3)
    assert headline_peak(_compute(peaks=(MEASURED, TABLE))) is TABLE  # order does not matter


def test_a_measured_peak_alone_is_the_headline() -> None:
    metrics = efficiency_metrics(_compute(peaks=(MEASURED,)), 1000.0)
    assert (metrics["peak_tflops"], metrics["peak_source"]) == (250.0, "measured")
    assert metrics["mfu"] == metrics["mfu_measured"] == pytest.approx(7.8 / 250.0, rel=1e-3)
    assert metrics["peak_table_tflops"] is None
    assert metrics["mfu_table"] is None


def test_no_compute_record_gives_all_sixteen_keys_null() -> None:
    metrics = efficiency_metrics(None, 100.0)
    assert list(metrics) == list(KEYS)
    assert len(KEYS) == 16
    assert set(metrics.values()) == {None}


def test_no_flops_leaves_achieved_and_mfu_null_but_keeps_the_peaks() -> None:
    metrics = efficiency_metrics(_compute(flops=None), 100.0)
    assert metrics["math_dtype"] == "fp16"
    for key in (
        "flops_per_image",
        "forward_flops_per_image",
        "backward_flops_per_image",
        "achieved_tflops",
        "mfu",
        "mfu_table",
        "mfu_measured",
    ):
        assert metrics[key] is None, key
    assert (metrics["peak_tflops"], metrics["peak_measured_tflops"]) == (312.0, 250.0)


def test_no_throughput_or_no_peak_leaves_mfu_null() -> None:
    assert efficiency_metrics(_compute(), None)["mfu"] is None
    assert efficiency_metrics(_compute(), 0.0)["achieved_tflops"] is None
    no_peak = efficiency_metrics(_compute(peaks=()), 100.0)
    assert no_peak["achieved_tflops"] == pytest.approx(0.78)
    assert (no_peak["peak_tflops"], no_peak["peak_source"], no_peak["mfu"]) == (None, None, None)


def test_training_splits_forward_and_backward() -> None:
    metrics = efficiency_metrics(_compute(TRAIN), 10.0)
    assert metrics["flops_per_image"] == 23_100_000_000
    assert metrics["forward_flops_per_image"] == 7_800_000_000
    assert metrics["backward_flops_per_image"] == 15_300_000_000
    assert efficiency_metrics(_compute(INFER), 10.0)["backward_flops_per_image"] is None


def test_energy_figures_come_from_the_counter_over_the_window() -> None:
    energy = Energy(joules=90.0, window_ms=1500.0, num_images=300, power_limit_w=400.0)
    metrics = efficiency_metrics(_compute(energy=energy), 200.0)
    assert metrics["energy_j_per_img"] == 0.3
    assert metrics["img_per_j"] == pytest.approx(3.333, abs=1e-3)
    assert metrics["mean_power_w"] == 60.0
    assert metrics["power_limit_w"] == 400.0
    assert efficiency_metrics(_compute(), 200.0)["energy_j_per_img"] is None  # a CPU: no NVML


@pytest.mark.parametrize(
    "energy",
    [
        Energy(joules=0.0, window_ms=1500.0, num_images=300),
        Energy(joules=-3.0, window_ms=1500.0, num_images=300),
        Energy(joules=90.0, window_ms=0.0, num_images=300),
        Energy(joules=90.0, window_ms=1500.0, num_images=0),
    ],
    ids=["zero-joules", "negative-joules", "no-window", "no-images"],
)
def test_an_energy_reading_that_cannot_be_right_is_unknown_not_zero(energy: Energy) -> None:
    metrics = efficiency_metrics(_compute(energy=energy), 200.0)
    for key in ("energy_j_per_img", "img_per_j", "mean_power_w"):
        assert metrics[key] is None, key
