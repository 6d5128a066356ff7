"""A CUDA profile without GPU activity says so, never that the step runs on the CPU."""

from __future__ import annotations

import json
from pathlib import Path

from libreyolo.analysis.summary import summarize
from libreyolo.document.files import save
from libreyolo.document.model import Memory, TraceAnalysis
from libreyolo.measure.assemble import no_gpu_activity_note
from libreyolo.render.jsondoc import to_json_text
from libreyolo.render.text import to_lines
from tests.conftest import invoke
from tests.profiles import training_profile
from tests.report import pagecheck


def test_a_cuda_run_without_a_trace_gets_the_no_gpu_trace_verdict() -> None:
    profile = training_profile("cuda:0")
    assert profile.verdict is not None
    assert profile.verdict.bound == "no-gpu-trace"
    assert "no GPU activity was recorded" in profile.verdict.why
    assert "CPU" not in profile.verdict.why
    assert profile.metrics["bound"] == "no-gpu-trace"


def test_a_cpu_run_keeps_the_cpu_verdict() -> None:
    profile = training_profile("cpu")
    assert profile.verdict is not None
    assert profile.verdict.bound == "compute"
    assert "CPU" in profile.verdict.why


def test_readers_show_the_no_gpu_trace_verdict() -> None:
    summary = summarize(training_profile("cuda:0"))
    text = "\n".join(to_lines(summary))
    assert "NO-GPU-TRACE: no GPU activity was recorded" in text
    data = json.loads(to_json_text(summary))
    assert data["bound"] == "no-gpu-trace"


def test_the_note_is_for_cuda_runs_without_gpu_activity_only() -> None:
    cpu_trace = TraceAnalysis(source="whole_trace", num_steps=0, window_ms=1.0, has_gpu=False)
    gpu_trace = TraceAnalysis(source="whole_trace", num_steps=0, window_ms=1.0, has_gpu=True)
    note = no_gpu_activity_note("cuda", None)
    assert note is not None and "no GPU activity was recorded" in note
    assert no_gpu_activity_note("cuda", cpu_trace) == note
    assert no_gpu_activity_note("cuda", gpu_trace) is None
    assert no_gpu_activity_note("cpu", None) is None


def test_the_note_names_kinetos_error_as_the_reason() -> None:
    note = no_gpu_activity_note("cuda", None, ["CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"])
    assert note is not None and "\n" not in note
    assert note.startswith(
        "no GPU activity was recorded (libkineto: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)"
    )
    assert no_gpu_activity_note("cpu", None, ["CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"]) is None


def test_a_cuda_run_without_gpu_activity_shows_the_allocators_peak(tmp_path: Path) -> None:
    """Text and page both say what is unknown and keep the peak VRAM the allocator recorded."""
    memory = Memory(peak_allocated_bytes=812_000_000, peak_reserved_bytes=1_024_000_000)
    profile = training_profile("cuda:0", device_memory=memory)
    text = "\n".join(to_lines(summarize(profile)))
    assert (
        "device   cuda:0, no GPU activity recorded: GPU util, Tensor Cores and launches "
        "unknown  |  peak VRAM 812.0 MB (allocator)"
    ) in text
    assert "CPU only" not in text
    path, page = tmp_path / "profile.json", tmp_path / "report.html"
    save(profile, path)
    assert invoke(["profile", "report", str(path), "-o", str(page)]).status == 0
    checked = pagecheck.parse(page.read_text())
    assert "peak VRAM 812.0 MB" in pagecheck.plain_text(checked)
    assert pagecheck.check_numbers(checked) > 3
