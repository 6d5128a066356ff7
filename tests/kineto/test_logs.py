"""libkineto's and c10's own stderr lines are told apart from the program's own."""

from __future__ import annotations

import pytest

from libreyolo.kineto.logs import is_noise, kineto_error


@pytest.mark.parametrize(
    "line",
    [
        "USDT:2026-12-01 10:11:33 7221:7221 SyncActivityProfilerHandler.cpp:39] profiler_start",
        "STAGE:2026-12-01 10:11:33 7221:7221 ActivityProfilerController.cpp:321] Completed Stage",
        "INFO:2026-12-01 10:11:33 7221:7221 init.cpp:139] CUDA versions",
        "ERROR:2026-12-01 10:11:33 7221:7221 CudaDeviceProperties.cpp:26] gpuGetDeviceCount failed",
        "[W1201 10:15:10.123456 CPUAllocator.cpp:249] Memory block of unknown size was allocated",
        "[W CPUAllocator.cpp:249] Memory block of unknown size was allocated",
        "   ",
    ],
)
def test_libkineto_and_c10_lines_are_noise(line: str) -> None:
    assert is_noise(line)


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: cannot reshape array",
        "stage 'measure' failed: RuntimeError: boom (lower --batch)",
        "ERROR: our own message, undated",
        "warning: WEIGHTS NOT AVAILABLE: LibreYOLO9t.pt is not in ./weights",
        "Traceback (most recent call last):",
    ],
)
def test_the_programs_own_lines_are_kept(line: str) -> None:
    assert not is_noise(line)


CUPTI_DENIED = (
    "ERROR:2026-12-01 10:11:33 7221:7221 CuptiActivityApi.cpp:285] "
    "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: no permission to profile the GPU"
)


def test_a_kineto_error_gives_its_message() -> None:
    assert kineto_error(CUPTI_DENIED) == (
        "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: no permission to profile the GPU"
    )


@pytest.mark.parametrize(
    "line",
    [
        "ERROR:2026-12-01 10:11:33 7221:7221 CudaDeviceProperties.cpp:26] gpuGetDeviceCount failed",
        "STAGE:2026-12-01 10:11:33 7221:7221 ActivityProfilerController.cpp:321] Completed Stage",
        "ERROR: our own message, undated",
        "",
    ],
)
def test_other_lines_and_a_missing_driver_are_no_kineto_error(line: str) -> None:
    assert kineto_error(line) is None
