"""The profile page on real inputs: GPU traces, libreyolo 1.6.0 files and CPU profiles. Every
number equals the readers' `--json`, the charts have one mark per datum, nothing is loaded from
outside the page, and names from files are escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import invoke
from tests.report import pagecheck

GPU_TRACES = (
    "hta_a100_ddp_train_3steps.json.gz",
    "hta_v100_ddp_train_5steps_ns.json.gz",
    "tracelens_b200_vllm_eager_nosteps.json.gz",
    "tracelens_h100_vit_infer_1step.json.gz",
)
V1_FILES = (
    "infer_b1.profile.json",
    "infer_b4.profile.json",
    "infer_repeat.json",
    "train_cpu.profile.json",
)


def _report(source: Path, out: Path) -> pagecheck.Page:
    result = invoke(["profile", "report", str(source), "-o", str(out)])
    assert result.status == 0, result.stderr
    assert result.stdout == f"{out}\n" and result.stderr == ""
    return pagecheck.parse(out.read_text(encoding="utf-8"))


def _check(source: Path, out: Path) -> tuple[pagecheck.Page, dict]:
    page = _report(source, out)
    assert page.external == []
    assert pagecheck.check_numbers(page) > 10
    phases = invoke(["profile", "phases", str(source), "--json"]).json()
    assert isinstance(phases, dict)
    assert len(pagecheck.marks(page, "steps")) >= len(phases["per_step"])
    summary = invoke(["profile", "summary", str(source), "--json"]).json()
    assert isinstance(summary, dict)
    text = pagecheck.plain_text(page)
    assert summary["verdict"]["why"] in text
    for note in summary["notes"]:
        assert " ".join(note.split()) in text
    for note in summary["trace_notes"]:  # labelled: a caveat about the trace, not the run
        assert " ".join(f"trace note: {note}".split()) in text
    return page, summary


@pytest.mark.parametrize("name", GPU_TRACES)
def test_gpu_trace_page(name: str, gpu_traces: Path, tmp_path: Path) -> None:
    page, summary = _check(gpu_traces / name, tmp_path / "report.html")
    kernels = invoke(["profile", "kernels", str(gpu_traces / name), "--json"]).json()
    assert isinstance(kernels, dict)
    cells = [n for n in page.numbers if n.src[:2] == ["kernels", "kernels"]]
    assert len(cells) == 3 * len(kernels["kernels"])  # ms/step, % GPU, calls/step per row
    assert len(pagecheck.marks(page, "kernel-mix")) == len(summary["categories"])


@pytest.mark.parametrize("name", V1_FILES)
def test_v1_file_page(name: str, reference_v1: Path, tmp_path: Path) -> None:
    page, summary = _check(reference_v1 / name, tmp_path / "report.html")
    if summary.get("trials"):
        trial_cells = [n for n in page.numbers if n.src[:2] == ["summary", "trials"]]
        assert len(trial_cells) >= 2 * len(summary["trials"])


def test_cpu_inference_page(cpu_infer_profile: Path, tmp_path: Path) -> None:
    page, summary = _check(cpu_infer_profile, tmp_path / "report.html")
    latency = summary["latency"]
    bins = pagecheck.marks(page, "latency")
    assert len(bins) == len(latency["histogram"])
    assert sum(m.value for m in bins) == latency["n"]
    assert len(pagecheck.marks(page, "stages")) == 3
    phases = invoke(["profile", "phases", str(cpu_infer_profile), "--json"]).json()
    assert isinstance(phases, dict)
    # synced steps stacked by stage (3 segments each), unsynced ones one faded column
    expected = sum(max(len(s["phase_ms"]), 1) for s in phases["per_step"])
    assert len(pagecheck.marks(page, "steps")) >= expected
    assert "Randomly initialised weights" in pagecheck.plain_text(page)


def test_cpu_training_page(cpu_train_profile: Path, tmp_path: Path) -> None:
    page, summary = _check(cpu_train_profile, tmp_path / "report.html")
    phases = invoke(["profile", "phases", str(cpu_train_profile), "--json"]).json()
    assert isinstance(phases, dict)
    assert len(pagecheck.marks(page, "phases")) == len(phases["phases"])
    assert summary["mode"] == "training" and "dataload" in pagecheck.plain_text(page)


def test_hostile_names_are_escaped(reference_v1: Path, tmp_path: Path) -> None:
    raw = json.loads((reference_v1 / "infer_b1.profile.json").read_text())
    raw["model"] = '<script>alert(1)</script>\x1b[2J"&'
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps(raw))
    html = tmp_path / "r.html"
    assert invoke(["profile", "report", str(hostile), "-o", str(html)]).status == 0
    text = html.read_text()
    assert "<script>alert" not in text and "\x1b" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[2J&quot;&amp;" in text


def test_world_page_draws_one_lane_per_rank(tmp_path: Path) -> None:
    world = Path(__file__).parents[1] / "fixtures" / "docs" / "world_cpu_straggler" / "profile.json"
    page, summary = _check(world, tmp_path / "report.html")
    ranks = summary["world"]["ranks"]
    lanes = pagecheck.marks(page, "ranks")
    # each rank: its five phases, and the collective wait apart where it waited
    assert len(lanes) == sum(len(r["phase_ms"]) + (1 if r["comm_ms"] else 0) for r in ranks)
    text = pagecheck.plain_text(page)
    assert "straggler: rank 1" in text and "collective wait" in text
