"""libkineto's own stderr lines (USDT probes, STAGE timings) never reach the user."""

from __future__ import annotations

import os

import pytest

from libreyolo.measure.window import Fd2Sink, TraceRecorder, kineto_log_level, plan_window


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


def test_kineto_errors_are_kept_apart_from_the_notes(capfd: pytest.CaptureFixture[str]) -> None:
    sink = Fd2Sink()
    written = (
        b"ERROR:2026-12-01 10:11:16 7086:7086 CuptiActivityApi.cpp:285] "
        b"CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\n"
        b"ERROR:2026-12-01 10:11:16 7086:7086 CudaDeviceProperties.cpp:26] "
        b"gpuGetDeviceCount failed\n"
    )
    sink.call(lambda: os.write(2, written))
    assert sink.drain() == []  # dated kineto lines are never notes of their own
    assert sink.kineto_errors == ["CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"]
    assert capfd.readouterr().err == ""


def test_kineto_logs_errors_on_cuda_only(monkeypatch: pytest.MonkeyPatch) -> None:
    assert kineto_log_level("cuda") == "3"
    assert kineto_log_level("cpu") == "5"
    monkeypatch.delenv("KINETO_LOG_LEVEL", raising=False)
    TraceRecorder(plan_window(1, 2), "cpu", enabled=True).close()
    assert os.environ["KINETO_LOG_LEVEL"] == "5"
    monkeypatch.setenv("KINETO_LOG_LEVEL", "1")  # the user's own level is kept
    TraceRecorder(plan_window(1, 2), "cpu", enabled=True).close()
    assert os.environ["KINETO_LOG_LEVEL"] == "1"
