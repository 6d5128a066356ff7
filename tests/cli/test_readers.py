"""Every reader on every fixture, text and JSON, against reviewed golden files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import invoke

V1_FILES = [
    "infer_b1.profile.json",
    "infer_b4.profile.json",
    "infer_repeat.json",
    "train_cpu.profile.json",
]
GPU_FILES = [
    "hta_a100_ddp_train_3steps.json.gz",
    "hta_v100_ddp_train_5steps_ns.json.gz",
    "tracelens_h100_vit_infer_1step.json.gz",
    "tracelens_b200_vllm_eager_nosteps.json.gz",
]
READERS = [["summary"], ["get"], ["phases"], ["kernels"], ["ops"]]


def _run_golden(argv: list[str], name: str, golden) -> None:
    for mode in ("text", "json"):
        args = [*argv, "--json"] if mode == "json" else argv
        result = invoke(["profile", *args])
        assert result.status == 0, result.stderr
        assert result.stderr == ""
        label = "_".join(a.lstrip("-") for a in argv[:1] + argv[2:]) or argv[0]
        golden(f"{mode}/{label}__{name}.{'json' if mode == 'json' else 'txt'}", result.stdout)


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r[0])
@pytest.mark.parametrize("name", V1_FILES)
def test_reader_on_v1_file_matches_golden(reader, name, reference_v1, monkeypatch, golden) -> None:
    monkeypatch.chdir(reference_v1)
    _run_golden([reader[0], name, *reader[1:]], name, golden)


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r[0])
@pytest.mark.parametrize("name", GPU_FILES)
def test_reader_on_gpu_trace_matches_golden(reader, name, gpu_traces, monkeypatch, golden) -> None:
    monkeypatch.chdir(gpu_traces)
    _run_golden([reader[0], name, *reader[1:]], name, golden)


GPU_VARIANTS = [
    ["kernels", "--category", "gemm", "--top", "5"],
    ["kernels", "--tensorcore", "--sort", "count", "--top", "5"],
    ["kernels", "--phase", "backward", "--top", "5"],
    ["kernels", "--grep", "nccl|elementwise", "--sort", "name", "--top", "5"],
    ["ops", "--phase", "forward", "--top", "5"],
    ["what-if", "--remove-category", "layout"],
    ["what-if", "--remove-launches", "100"],
    ["get", "gpu_util"],
    ["get", "tensorcore_pct"],
]


@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=lambda v: "_".join(v))
def test_reader_variant_on_a100_matches_golden(variant, gpu_traces, monkeypatch, golden) -> None:
    monkeypatch.chdir(gpu_traces)
    name = "hta_a100_ddp_train_3steps.json.gz"
    _run_golden([variant[0], name, *variant[1:]], name, golden)


COMPARE_PAIRS = [
    ("infer_b1.profile.json", "infer_b4.profile.json"),
    ("infer_repeat.json", "infer_b1.profile.json"),
    ("infer_repeat.json", "infer_repeat.json"),
    ("train_cpu.profile.json", "infer_b1.profile.json"),
]


@pytest.mark.parametrize(("before", "after"), COMPARE_PAIRS)
def test_compare_v1_files_matches_golden(before, after, reference_v1, monkeypatch, golden) -> None:
    monkeypatch.chdir(reference_v1)
    for mode in ("text", "json"):
        flag = ["--json"] if mode == "json" else []
        result = invoke(["profile", "compare", before, after, *flag])
        assert result.status == 0, result.stderr
        golden(f"{mode}/compare__{before}__{after}.{'json' if flag else 'txt'}", result.stdout)


def test_compare_gpu_traces_matches_golden(gpu_traces, monkeypatch, golden) -> None:
    monkeypatch.chdir(gpu_traces)
    result = invoke(["profile", "compare", GPU_FILES[0], GPU_FILES[1]])
    assert result.status == 0, result.stderr
    golden("text/compare__a100__v100.txt", result.stdout)


def test_profile_without_subcommand_lists_subcommands() -> None:
    result = invoke(["profile"])
    assert result.status == 0 and result.stderr == ""
    names = [line.split()[0] for line in result.stdout.splitlines() if line.startswith("  ")]
    assert names == [
        "run",
        "infer",
        "summary",
        "get",
        "phases",
        "kernels",
        "ops",
        "memory",
        "compare",
        "what-if",
        "report",
        "log",
    ]


SUB_FLAGS = {
    "run": [
        "--weights",
        "--size",
        "--batch",
        "--imgsz",
        "--workers",
        "--amp",
        "--no-amp",
        "--steps",
        "--warmup",
        "--repeat",
        "--device",
        "--project",
        "--json",
    ],
    "infer": [
        "--weights",
        "--size",
        "--batch",
        "--imgsz",
        "--half",
        "--no-half",
        "--amp-dtype",
        "--warmup",
        "--runs",
        "--repeat",
        "--conf",
        "--iou",
        "--max-det",
        "--device",
        "--trace",
        "--no-trace",
        "--project",
        "--json",
    ],
    "kernels": ["--top", "--category", "--grep", "--tensorcore", "--sort", "--phase", "--json"],
    "ops": ["--top", "--phase", "--json"],
    "what-if": ["--remove-category", "--remove-launches", "--json"],
    "summary": ["--json"],
    "get": ["--json"],
    "phases": ["--json"],
    "compare": ["--json"],
}


@pytest.mark.parametrize("sub", sorted(SUB_FLAGS))
def test_subcommand_help_documents_every_flag(sub: str) -> None:
    result = invoke(["profile", sub, "--help"])
    assert result.status == 0
    for flag in SUB_FLAGS[sub]:
        assert flag in result.stdout, flag


def test_python_m_libreyolo_profile_help_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "libreyolo", "profile", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "profile" in proc.stdout


def test_get_prints_one_value_and_nothing_else(reference_v1: Path, monkeypatch) -> None:
    monkeypatch.chdir(reference_v1)
    assert invoke(["profile", "get", "infer_b1.profile.json", "forward_ms"]).stdout == "250.833\n"
    assert invoke(["profile", "get", "infer_b1.profile.json", "peak_vram_mb"]).stdout == "null\n"
    assert (
        invoke(["profile", "get", "infer_b1.profile.json", "memory_pressure"]).stdout == "false\n"
    )
    result = invoke(["profile", "get", "infer_b1.profile.json", "forward_ms", "--json"])
    assert result.json() == {"forward_ms": 250.833}


def test_get_reports_the_trial_mean_on_repeat_files(reference_v1: Path, monkeypatch) -> None:
    monkeypatch.chdir(reference_v1)
    assert invoke(["profile", "get", "infer_repeat.json", "img_per_s"]).stdout == "7.53\n"


def test_get_lists_every_v1_metric_name(reference_v1: Path, monkeypatch) -> None:
    monkeypatch.chdir(reference_v1)
    names = invoke(["profile", "get", "train_cpu.profile.json", "--json"]).json()
    v1_train = [
        "backward_gpu_ms",
        "backward_kernels",
        "backward_ops",
        "backward_wall_ms",
        "bound",
        "cuda_mallocs_per_step",
        "dataload_frac",
        "dataload_gpu_ms",
        "dataload_kernels",
        "dataload_ms",
        "dataload_ops",
        "dataload_wall_ms",
        "forward_gpu_ms",
        "forward_kernels",
        "forward_ops",
        "forward_wall_ms",
        "gpu_busy_ms",
        "gpu_util",
        "host_overhead_ms",
        "img_per_s",
        "kernels_per_step",
        "launches_per_step",
        "mean_kernel_us",
        "memcpy_ms",
        "memory_pressure",
        "ops_per_step",
        "optimizer_gpu_ms",
        "optimizer_kernels",
        "optimizer_ops",
        "optimizer_wall_ms",
        "peak_vram_mb",
        "step_ms",
        "tensorcore_pct",
        "to_device_gpu_ms",
        "to_device_kernels",
        "to_device_ops",
        "to_device_wall_ms",
        "unique_kernels",
    ]
    assert set(v1_train) <= set(names)


def test_colour_terminal_output_is_styled(gpu_traces: Path) -> None:
    import io

    from libreyolo.boundary.output import Output
    from libreyolo.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    name = str(gpu_traces / "hta_a100_ddp_train_3steps.json.gz")
    assert main(["profile", "summary", name], output=Output(out, err, color=True)) == 0
    assert "\x1b[" in out.getvalue() and "█" in out.getvalue()
    assert "HOST / LAUNCH" in out.getvalue()
