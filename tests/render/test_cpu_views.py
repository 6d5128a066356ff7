"""A CPU-only profile's views carry no GPU-kernel parts: no kernel counts in `summary`'s
headline, no empty `kernel mix:` / `top kernels/step:` headings, the `--json` keys of 1.6.0
kept (zero or empty), and a profile page that does not promise kernels in the trace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from libreyolo.analysis.summary import summarize
from libreyolo.render.text import to_lines
from tests.conftest import invoke
from tests.profiles import training_profile
from tests.report import pagecheck

KERNEL_PARTS = ("kernel mix:", "top kernels/step:")
CPU_ONLY = (
    "device   CPU only: no GPU kernels (GPU util, Tensor Cores, VRAM and launches do not apply)"
)
# The GPU keys of libreyolo 1.6.0's `summary --json`, in the order it printed them.
V1_GPU_KEYS = (
    "gpu_util",
    "gpu_busy_ms_per_step",
    "mean_kernel_us",
    "kernels_per_step",
    "unique_kernels",
    "memcpy_ms_per_step",
    "tensorcore_pct",
    "peak_vram_mb",
    "host_overhead_ms_per_step",
    "launches_per_step",
    "memory_pressure",
    "cuda_mallocs_per_step",
    "categories",
    "top_kernels",
)


def _summary(path: Path) -> list[str]:
    result = invoke(["profile", "summary", str(path)])
    assert result.status == 0 and result.stderr == ""
    return result.stdout.splitlines()


@pytest.mark.parametrize(
    ("name", "headline"),
    [
        ("train_cpu.profile.json", "model YOLOv9-t (yolo9)  |  4.21 img/s  |  step 949.27 ms"),
        (
            "infer_b1.profile.json",
            "model LibreYOLO9t.pt (yolo9)  |  7.81 img/s  |  step 127.97 ms",
        ),
    ],
)
def test_a_v1_cpu_summary_has_no_kernel_parts(name: str, headline: str, reference_v1) -> None:
    lines = _summary(reference_v1 / name)
    assert lines[0] == headline
    assert not any(line in KERNEL_PARTS for line in lines)
    assert lines.count(CPU_ONLY) == 1


def test_a_measured_cpu_summary_shows_the_op_mix_only(cpu_infer_profile: Path) -> None:
    lines = _summary(cpu_infer_profile)
    assert re.fullmatch(r"model \S+ \(yolo9\)  \|  [0-9.]+ img/s  \|  step [0-9.]+ ms", lines[0])
    assert not any(line in KERNEL_PARTS for line in lines)
    assert "op mix (CPU self time):" in lines and "top ops/step (self time):" in lines


def test_a_profile_without_a_trace_does_not_print_unknown_kernels() -> None:
    lines = to_lines(summarize(training_profile("cpu")))  # no trace: kernels_per_step is null
    assert lines[0] == "model ?  |  200.0 img/s  |  step 20.0 ms"
    assert not any(line in KERNEL_PARTS for line in lines)


def test_a_cpu_summary_json_keeps_the_v1_gpu_keys(cpu_infer_profile: Path) -> None:
    doc = invoke(["profile", "summary", str(cpu_infer_profile), "--json"]).json()
    assert isinstance(doc, dict)
    assert [key for key in V1_GPU_KEYS if key not in doc] == []
    assert (doc["categories"], doc["top_kernels"], doc["kernels_per_step"]) == ([], [], 0)
    assert doc["has_gpu"] is False


def test_a_cpu_profile_page_does_not_promise_kernels(cpu_infer_profile: Path, tmp_path) -> None:
    out = tmp_path / "report.html"
    assert invoke(["profile", "report", str(cpu_infer_profile), "-o", str(out)]).status == 0
    text = pagecheck.plain_text(pagecheck.parse(out.read_text(encoding="utf-8")))
    assert "The timeline of every op is in" in text
    assert "op and kernel" not in text and "Top kernels" not in text
