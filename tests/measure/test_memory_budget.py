"""The host-memory estimate and decision on fake numbers: bytes per image, what is available,
and the one line that refuses a batch that cannot fit."""

from __future__ import annotations

import pytest

from libreyolo.errors import WontFitError
from libreyolo.measure.memory_budget import (
    WINDOW_OVERHEAD_BYTES,
    WORKER_BYTES,
    HostNeed,
    available_bytes,
    batches_in_flight,
    cgroup_room,
    check_fits,
    infer_need,
    parse_mem_available,
    scaled,
    train_need,
)

MEMINFO = (
    "MemTotal:       24683520 kB\n"
    "MemFree:        22429060 kB\n"
    "MemAvailable:   24197012 kB\n"
    "Buffers:           2076 kB\n"
)


def test_mem_available_is_read_in_bytes_and_none_when_the_kernel_has_none() -> None:
    assert parse_mem_available(MEMINFO) == 24197012 * 1024
    assert parse_mem_available("MemTotal: 1 kB\nMemFree: 1 kB\n") is None
    assert parse_mem_available("MemAvailable: lots kB\n") is None


@pytest.mark.parametrize(
    ("limit", "current", "stat", "room"),
    [
        ("8589934592\n", "2147483648\n", "", 6442450944),
        ("8589934592\n", "2147483648\n", "anon 1\ninactive_file 1073741824\n", 7516192768),
        ("max\n", "2147483648\n", "", None),  # no limit: the group says nothing
        ("1000\n", "5000\n", "", 0),  # over its limit (reclaim pending): nothing left
        ("", "", "", None),
    ],
)
def test_a_cgroup_leaves_its_limit_less_its_usage_plus_inactive_file_cache(
    limit: str, current: str, stat: str, room: int | None
) -> None:
    assert cgroup_room(limit, current, stat) == room


def test_available_is_the_least_of_meminfo_and_every_group() -> None:
    assert available_bytes(10_000, [None, 4_000, 7_000]) == 4_000
    assert available_bytes(3_000, [None, 4_000]) == 3_000
    assert available_bytes(3_000, []) == 3_000
    assert available_bytes(None, [4_000]) is None  # no /proc: no check


def test_activations_scale_with_the_pixels() -> None:
    assert scaled(280_000, 64, 640) == 28_000_000
    assert scaled(280_000, 64, 64) == 280_000
    assert scaled(1_000, 64, 32) == 250


def test_inference_on_the_cpu_counts_the_live_set_with_slack_and_the_uint8_image() -> None:
    need = infer_need(640, live_bytes_per_image=27_000_000, on_cpu=True)
    assert need == HostNeed(3 * 640 * 640 + 33_750_000, WINDOW_OVERHEAD_BYTES)
    with_decode = infer_need(
        640, live_bytes_per_image=27_000_000, on_cpu=True, decoded_bytes_per_image=1_000_000
    )
    assert with_decode.per_image_bytes == need.per_image_bytes + 1_000_000


def test_inference_on_an_accelerator_keeps_only_decoded_files_on_the_host() -> None:
    assert infer_need(640, live_bytes_per_image=0, on_cpu=False) == HostNeed(0, 0)
    need = infer_need(640, live_bytes_per_image=0, on_cpu=False, decoded_bytes_per_image=2_000_000)
    assert need == HostNeed(2_000_000, 0)


@pytest.mark.parametrize(
    ("workers", "pinned", "in_flight"), [(0, False, 0), (0, True, 1), (2, False, 4), (3, True, 7)]
)
def test_batches_in_flight(workers: int, pinned: bool, in_flight: int) -> None:
    assert batches_in_flight(workers, 2, pinned=pinned) == in_flight


def test_training_on_the_cpu_counts_loader_activations_and_parameter_copies() -> None:
    need = train_need(
        320,
        kept_bytes_per_image=10_000_000,
        workers=2,
        prefetch_factor=2,
        pinned=False,
        on_cpu=True,
        param_bytes=8_000_000,
    )
    float_image, uint8_image = 3 * 320 * 320 * 4, 3 * 320 * 320
    # stepped + its channels-last copy + 4 queued; two builders of two uint8 copies each
    loader = 6 * float_image + 2 * 2 * uint8_image
    assert need.per_image_bytes == loader + 15_000_000
    assert need.fixed_bytes == 2 * WORKER_BYTES + 3 * 8_000_000 + WINDOW_OVERHEAD_BYTES


def test_training_on_an_accelerator_counts_the_loader_only() -> None:
    need = train_need(
        320,
        kept_bytes_per_image=10_000_000,  # on the device: not the host's
        workers=2,
        prefetch_factor=2,
        pinned=True,
        on_cpu=False,
        param_bytes=8_000_000,
    )
    float_image, uint8_image = 3 * 320 * 320 * 4, 3 * 320 * 320
    assert need == HostNeed((1 + 5) * float_image + 4 * uint8_image, 2 * WORKER_BYTES)


def test_a_batch_that_cannot_fit_is_one_line_with_the_numbers_and_the_way_out() -> None:
    with pytest.raises(WontFitError) as info:
        check_fits(HostNeed(15_400_000), batch=4000, imgsz=640, available=21_900_000_000)
    assert info.value.message == (
        "--batch 4000 at --imgsz 640 needs about 61.6 GB of memory (15.4 MB an image); "
        "21.9 GB are available"
    )
    assert info.value.hint == "lower --batch to about 1400 or --imgsz"
    assert info.value.code == "wont_fit" and info.value.status == 3


def test_when_not_even_one_image_fits_only_the_size_and_other_levers_are_named() -> None:
    with pytest.raises(WontFitError) as info:
        check_fits(
            HostNeed(30_000_000_000, 100_000_000),
            batch=1,
            imgsz=20000,
            available=22_000_000_000,
            other_levers=("--workers",),
        )
    assert info.value.message == (
        "--batch 1 at --imgsz 20000 needs about 30.1 GB of memory (30.0 GB an image); "
        "22.0 GB are available"
    )
    assert info.value.hint == "lower --imgsz or --workers"


@pytest.mark.parametrize(
    ("per_image_bytes", "available", "hint"),
    [
        (27_000_000, 1_000_000_064, "lower --batch to about 37, --imgsz or --workers"),
        (10_000_000, 14_270_000_064, "lower --batch to about 1400, --imgsz or --workers"),
        (10_000_000, 14_269_999_999, "lower --batch to about 1400, --imgsz or --workers"),
        (1_000_000, 12_345_000_064, "lower --batch to about 12000, --imgsz or --workers"),
    ],
)
def test_the_batch_that_fits_leaves_room_for_the_fixed_bytes_and_is_rounded_down(
    per_image_bytes: int, available: int, hint: str
) -> None:
    need = HostNeed(per_image_bytes, fixed_bytes=64)
    with pytest.raises(WontFitError) as info:
        check_fits(need, batch=50000, imgsz=640, available=available, other_levers=("--workers",))
    assert info.value.hint == hint


def test_a_batch_that_fits_or_an_unknown_budget_passes() -> None:
    need = HostNeed(10_000_000, 64)
    check_fits(need, batch=100, imgsz=640, available=1_000_000_064)  # exactly enough
    check_fits(need, batch=10**6, imgsz=640, available=None)  # no /proc: say nothing
    assert need.batch_that_fits(1_000_000_064) == 100
    assert need.batch_that_fits(9_999_999) == 0
