"""`--csv` on the tabular readers: the rows of `--json`, read back with the stdlib `csv` module.

Each reader runs twice on a real fixture, once with `--json`, once with `--csv`; the CSV must
parse with `csv.DictReader` into the JSON's rows (same order, same values: each cell the value's
JSON text, a string bare, null empty) under the exact header docs/csv-format.md lists.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from libreyolo.render.csv_out import COMPARE_COLUMNS, KERNEL_COLUMNS, OP_COLUMNS, PHASE_COLUMNS
from tests.cli.test_compare_sweeps import _sweeps
from tests.conftest import invoke
from tests.sweep.test_report import make_sweep
from tests.test_architecture import _run_blocked

A100 = "hta_a100_ddp_train_3steps.json.gz"
KERNEL_HEADER = [
    "kernel",
    "raw_name",
    "category",
    "tensorcore",
    "ms_per_step",
    "pct_of_gpu",
    "count_per_step",
    "name",
]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def _flat(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, dict):
            out |= _flat(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


def _both(argv: list[str]) -> tuple[Any, list[str], list[dict[str, str]]]:
    """`--json`'s document, and `--csv`'s header and rows."""
    as_json = invoke(["profile", *argv, "--json"])
    as_csv = invoke(["profile", *argv, "--csv"])
    assert (as_json.status, as_csv.status, as_csv.stderr) == (0, 0, ""), as_csv.stderr
    assert "\r" not in as_csv.stdout and as_csv.stdout.endswith("\n")
    reader = csv.DictReader(io.StringIO(as_csv.stdout, newline=""))
    rows = list(reader)
    return as_json.json(), list(reader.fieldnames or []), rows


def _expected(rows: list[dict[str, Any]], header: list[str]) -> list[dict[str, str]]:
    return [{c: _cell(_flat(row).get(c)) for c in header} for row in rows]


@pytest.mark.parametrize(
    "flags",
    [[], ["--top", "5", "--sort", "count", "--tensorcore"], ["--phase", "backward", "--top", "5"]],
)
def test_kernels_csv_has_the_json_rows(flags: list[str], gpu_traces: Path, monkeypatch) -> None:
    monkeypatch.chdir(gpu_traces)
    doc, header, rows = _both(["kernels", A100, *flags])
    assert header == KERNEL_HEADER == list(KERNEL_COLUMNS)
    assert doc["kernels"] and list(doc["kernels"][0]) == header
    assert rows == _expected(doc["kernels"], header)


def test_kernels_csv_numbers_read_back_as_the_json_numbers(gpu_traces: Path, monkeypatch) -> None:
    monkeypatch.chdir(gpu_traces)
    doc, _, rows = _both(["kernels", A100, "--top", "3"])
    assert [float(r["ms_per_step"]) for r in rows] == [k["ms_per_step"] for k in doc["kernels"]]
    assert rows[0]["name"].startswith("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, ")
    assert rows[0]["tensorcore"] == "false"


def test_an_empty_kernel_table_is_its_header(reference_v1: Path, monkeypatch) -> None:
    monkeypatch.chdir(reference_v1)
    result = invoke(["profile", "kernels", "train_cpu.profile.json", "--csv"])
    assert (result.status, result.stderr) == (0, "")
    assert result.stdout == ",".join(KERNEL_HEADER) + "\n"


def test_ops_csv_has_the_json_rows(reference_v1: Path, monkeypatch) -> None:
    monkeypatch.chdir(reference_v1)
    doc, header, rows = _both(["ops", "infer_b1.profile.json", "--top", "7"])
    assert header == list(OP_COLUMNS) == list(doc["ops"][0])
    assert len(rows) == 7
    assert rows == _expected(doc["ops"], header)
    assert rows[0]["op"] == "aten::conv2d" and rows[0]["self_ms_per_step"] == ""


def test_phases_csv_has_the_json_phase_table(reference_v1: Path, monkeypatch) -> None:
    monkeypatch.chdir(reference_v1)
    doc, header, rows = _both(["phases", "train_cpu.profile.json"])
    assert header == list(PHASE_COLUMNS) == list(doc["phases"][0])
    assert [r["phase"] for r in rows] == [
        "dataload",
        "to_device",
        "forward",
        "backward",
        "optimizer",
    ]
    assert rows == _expected(doc["phases"], header)


def test_compare_csv_has_one_row_per_metric(reference_v1: Path, monkeypatch) -> None:
    monkeypatch.chdir(reference_v1)
    doc, header, rows = _both(["compare", "infer_b1.profile.json", "infer_b4.profile.json"])
    assert (
        header
        == list(COMPARE_COLUMNS)
        == [
            *["metric", "before", "after", "change", "change_points", "moved"],
            *["std.before", "std.after", "n.before", "n.after", "significant", "significance"],
            *["mean.before", "mean.after", "standard_error", "threshold_multiplier", "df"],
        ]
    )
    not_deltas = ("before", "after", "gate", "warnings", "changes", "trainer_gap", "scaling")
    metrics = [k for k in doc if k not in not_deltas]
    metrics.remove("compute")
    metrics.remove("tensor_memory")  # neither 1.6.0 file tracked a step: no rows
    assert doc["tensor_memory"] is None
    computed = [f"compute.{k}" for k in doc["compute"] if k != "same_work"]
    assert [r["metric"] for r in rows] == [*metrics, *computed]
    img = rows[0]
    assert img["metric"] == "img_per_s"
    assert (img["before"], img["after"], img["change"]) == ("7.81", "5.51", "-0.2945")
    assert (img["n.before"], img["n.after"], img["std.before"]) == ("1", "1", "")
    assert rows == [_delta_cells(row["metric"], doc) for row in rows]


def test_compare_csv_has_the_tensor_peak_and_each_category() -> None:
    trained = (
        Path(__file__).parents[1] / "fixtures" / "docs" / "train_yolo9t_cpu_b8_320.profile.json"
    )
    doc, _, rows = _both(["compare", str(trained), str(trained)])
    tensors = {r["metric"]: r for r in rows if r["metric"].startswith("tensor_memory.")}
    expected = ["peak_mb", *doc["tensor_memory"]["categories"]]
    assert list(tensors) == [f"tensor_memory.{name}" for name in expected]
    peak = tensors["tensor_memory.peak_mb"]
    assert (peak["before"], peak["after"], peak["change"]) == ("986.0", "986.0", "0.0")
    assert "tensor_memory.grads" not in tensors  # zero on both sides: left out


def _delta_cells(metric: str, doc: dict[str, Any]) -> dict[str, str]:
    """compare's CSV row for `metric`: its delta's keys, each [before, after] pair split."""
    delta = doc["compute"][metric[8:]] if metric.startswith("compute.") else doc[metric]
    cells = {"metric": metric}
    for key, value in (delta or {}).items():
        if key in ("std", "n", "mean"):
            cells |= {f"{key}.before": _cell(value[0]), f"{key}.after": _cell(value[1])}
        else:
            cells[key] = _cell(value)
    return {c: cells.get(c, "") for c in COMPARE_COLUMNS}


def test_summary_of_a_sweep_csv_has_its_points(tmp_path: Path) -> None:
    from libreyolo.sweep.report import write_report

    write_report(make_sweep(tmp_path / "sweep"))
    doc, header, rows = _both(["summary", str(tmp_path / "sweep")])
    assert header[:5] == ["point", "status", "reason", "code", "overrides"]
    assert header[header.index("profile") + 1 :][:3] == [
        "metrics.img_per_s",
        "metrics.step_ms",
        "metrics.latency_p50_ms",
    ]
    named = [{"point": name} | row for name, row in doc["points"].items()]
    assert rows == _expected(named, header)
    first = rows[0]
    assert first["point"] == "b1_s64_amp1" and first["metrics.img_per_s"] == "50.0"
    assert json.loads(first["overrides"]) == doc["points"]["b1_s64_amp1"]["overrides"]


def test_compare_of_two_sweeps_csv_has_one_row_per_point(tmp_path: Path) -> None:
    doc, header, rows = _both(["compare", *_sweeps(tmp_path, [201.0, 203.0, 199.0])])
    tested = [c for c in COMPARE_COLUMNS[1:] if c not in ("change_points", "moved")]
    gate = ["metric", "threshold_pct", "change_pct", "significant", "failed"]
    assert header == [
        *["point", "batch", "imgsz", "amp", "threads", "not_compared"],
        *(f"img_per_s.{c}" for c in tested),
        *(f"gate.{c}" for c in gate),
    ]
    assert [r["point"] for r in rows] == [p["point"] for p in doc["points"]]
    for row, point in zip(rows, doc["points"], strict=True):
        cells = _delta_cells("img_per_s", point)
        assert {c: row[f"img_per_s.{c}"] for c in tested} == {c: cells[c] for c in tested}
        assert (row["batch"], row["not_compared"]) == (
            _cell(point["batch"]),
            _cell(point["not_compared"]),
        )
    assert rows[2]["not_compared"] == "only in before" and rows[2]["img_per_s.before"] == ""


def test_csv_and_json_together_exit_2(reference_v1: Path, monkeypatch) -> None:
    monkeypatch.chdir(reference_v1)
    result = invoke(["profile", "ops", "infer_b1.profile.json", "--csv", "--json"])
    assert (result.status, result.stdout) == (2, "")
    assert json.loads(result.stderr)["error"] == {
        "code": "usage",
        "message": "--csv and --json each print the whole result: give one of them",
        "hint": None,
    }


def test_a_profiles_summary_as_csv_exits_2(reference_v1: Path, monkeypatch) -> None:
    monkeypatch.chdir(reference_v1)
    result = invoke(["profile", "summary", "infer_b1.profile.json", "--csv"])
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == (
        "a profile's summary is not a table: use --json "
        "(kernels, ops, phases and compare take --csv)\n"
    )


@pytest.mark.parametrize("reader", ["get", "what-if", "report"])
def test_readers_without_a_table_take_no_csv(reader: str, reference_v1: Path) -> None:
    result = invoke(["profile", reader, str(reference_v1 / "infer_b1.profile.json"), "--csv"])
    assert result.status == 2
    assert "unrecognized arguments: --csv" in result.stderr


def test_a_regressed_sweep_point_exits_4_with_its_gate_in_the_csv(tmp_path: Path) -> None:
    argv = ["profile", "compare", *_sweeps(tmp_path, [150.0, 151.0, 149.0]), "--csv"]
    result = invoke([*argv, "--fail-on-regression", "5"])
    assert result.status == 4
    rows = list(csv.DictReader(io.StringIO(result.stdout, newline="")))
    assert [(r["point"], r["gate.failed"]) for r in rows] == [
        ("b1_s64_amp1", "false"),
        ("b2_s64_amp1", "true"),
        ("b4_s64_amp1", ""),
        ("b8_s64_amp1", ""),
    ]


def test_names_are_quoted_and_their_control_characters_escaped() -> None:
    from libreyolo.analysis.kernels import KernelRow, KernelTable
    from libreyolo.render.csv_out import to_csv_text

    name = 'k<float, 2>("x")\n\x1b[2J'
    row = KernelRow(name, "gemm", "gemm / conv", True, 0.1 + 0.2, 1 / 3, 2.0)
    text = to_csv_text(KernelTable(phase=None, num_matched=1, rows=(row,)))
    assert text.splitlines()[1] == (
        r'gemm,"k<float, 2>(""x"")\n\x1b[2J",gemm / conv,true,0.3,33.33,2.0,'
        r'"k<float, 2>(""x"")\n\x1b[2J"'
    )


def test_csv_needs_no_heavy_module(reference_v1: Path) -> None:
    a, b = str(reference_v1 / "infer_b1.profile.json"), str(reference_v1 / "infer_b4.profile.json")
    proc = _run_blocked(["profile", "compare", a, b, "--csv"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("metric,before,after,change,")
