"""A crashed point's reason: its own last error, not libkineto's or c10's log lines."""

from __future__ import annotations

import pytest

from libreyolo.pids import exit_text
from libreyolo.sweep.child_log import last_error, relayed

TRACEBACK = """\
Traceback (most recent call last):
  File "/x/libreyolo/measure/infer.py", line 10, in run
    raise KeyError("boom")
KeyError: 'boom'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/x/libreyolo/sweep/point.py", line 99, in measure_request
    record = _measure(request, point_dir, clock)
             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
ValueError: the real error
with a second line
"""
KINETO = """\
USDT:2026-12-01 10:15:10 8988:8988 SyncActivityProfilerHandler.cpp:39] profiler_start
STAGE:2026-12-01 10:15:10 8988:8988 ActivityProfilerController.cpp:314] Completed Stage: Warm Up
USDT:2026-12-01 10:15:10 8988:8988 SyncActivityProfilerHandler.cpp:46] profiler_stop
ERROR:2026-12-01 10:15:10 8988:8988 DeviceProperties.cpp:56] gpuGetDeviceCount failed with code 35
[W1201 10:15:10.608617463 CPUAllocator.cpp:249] Memory block of unknown size was allocated
[W CPUAllocator.cpp:249] Memory block of unknown size was allocated before the profiling started
"""


@pytest.mark.parametrize(
    ("log", "reason"),
    [
        (TRACEBACK + KINETO, "ValueError: the real error"),
        (KINETO + TRACEBACK, "ValueError: the real error"),
        ("loading the model\nSegmentation fault\n" + KINETO, "Segmentation fault"),
        (KINETO, "no output"),
        ("", "no output"),
    ],
)
def test_last_error_skips_kineto_lines_and_takes_the_final_exception(log: str, reason: str) -> None:
    assert last_error(log) == reason


@pytest.mark.parametrize(
    ("code", "text"),
    [(1, "1"), (-9, "-9 (signal SIGKILL)"), (-11, "-11 (signal SIGSEGV)"), (None, "None")],
)
def test_a_signal_exit_is_named(code: int | None, text: str) -> None:
    assert exit_text(code) == text


def test_a_warning_every_point_repeats_is_relayed_once() -> None:
    warning = "warning: WEIGHTS NOT AVAILABLE: LibreYOLO9t.pt is not in ./weights\n"
    warned: set[str] = set()
    first = relayed(KINETO + warning + "note: batch 8\n", warned)
    second = relayed(warning + "note: batch 16\nwarning: host busy\n", warned)
    assert first == warning + "note: batch 8\n"
    assert second == "note: batch 16\nwarning: host busy\n"
    assert warned == {warning.rstrip(), "warning: host busy"}
