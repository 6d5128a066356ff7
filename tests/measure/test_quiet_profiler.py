"""libkineto's own stderr lines (USDT probes, STAGE timings) never reach the user."""

from __future__ import annotations

import os

import pytest

from libreyolo.measure.window import Fd2Sink, TraceRecorder, plan_window


def test_fd2_sink_keeps_kineto_lines_off_stderr_and_notes_the_rest(
    capfd: pytest.CaptureFixture[str],
) -> None:
    sink = Fd2Sink()
    written = (
        b"USDT:2026-12-01 10:11:16 7086:7086 SyncActivityProfilerHandler.cpp:39] profiler_start\n"
        b"STAGE:2026-12-01 10:11:16 7086:7086 ActivityProfilerController.cpp:312] Completed\n"
        b"\x1b[2K\rmeasured step 3/8\n"
        b"[W kineto] CUPTI could not be initialised\n"
    )
    assert sink.call(lambda: os.write(2, written)) == len(written)
    os.write(2, b"ours\n")  # outside a call, fd 2 is the real stderr again
    assert capfd.readouterr().err == "ours\n"
    assert sink.drain() == ["profiler: [W kineto] CUPTI could not be initialised"]
    assert sink.drain() == []  # drained and closed


def test_a_traced_cpu_window_writes_nothing_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    import torch

    plan = plan_window(1, 2)
    recorder = TraceRecorder(plan, "cpu", enabled=True)
    for _ in range(plan.num_traced):
        torch.ones(8, 8) @ torch.ones(8, 8)
        recorder.step()
    recorder.close()
    assert capfd.readouterr().err == ""
    assert not [note for note in recorder.notes if "USDT" in note or "STAGE" in note]


def test_a_window_without_warmup_raises_no_torch_warning() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch's "won't be using warmup" would fail this
        TraceRecorder(plan_window(0, 2), "cpu", enabled=True).close()
