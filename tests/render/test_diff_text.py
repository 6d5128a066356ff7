"""The text and JSON views of a ProfileDiff, and compare's text and --json with them."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec.structs

from libreyolo.analysis.compare import compare
from libreyolo.analysis.diff import diff_profiles
from libreyolo.analysis.kernel_names import RULE
from libreyolo.document.model import OpStat, PhaseStat, Profile, Trial
from libreyolo.render.diff_json import diff_json
from libreyolo.render.diff_text import DIFF_HEADER, SINGLE_WINDOW_HEADER, diff_lines
from tests.analysis.test_diff import _kernel, _op, _profile
from tests.cli.test_readers import GPU_FILES
from tests.conftest import invoke


def _cpu_pair():
    before = _profile(
        phases=(PhaseStat(name="forward", wall_ms_per_step=5.0), PhaseStat(name="nms")),
        ops=(_op("aten::batch_norm", 1.0), _op("aten::conv2d", 4.0)),
    )
    after = _profile(
        step_ms=None,
        phases=(PhaseStat(name="forward"), PhaseStat(name="nms", cpu_ms=2.0)),
        ops=(
            _op("aten::conv2d", 6.0),
            OpStat(name="x\x1b[2J", self_ms=1.0, total_ms=1.0, num_calls=1),
        ),
    )
    return diff_profiles(before, after)


def test_cpu_diff_lines_have_no_kernel_section_and_no_null() -> None:
    lines = diff_lines(_cpu_pair())
    text = "\n".join(lines)
    assert lines[0] == SINGLE_WINDOW_HEADER  # no trials on either side
    assert "kernels" not in text and "gpu" not in text
    assert "null" not in text and "None" not in text
    assert "  forward        wall 5.000 -> ? (?)" in lines
    assert "  nms            wall ? -> 1.000 (?)" in lines
    assert "  +1.000  2.000 -> 3.000 ms  x1 -> x1  aten::conv2d" in lines
    assert "  - gone  0.500 ms  x1  aten::batch_norm" in lines
    assert "  + new   0.500 ms  x0.5  x\\x1b[2J" in lines  # names from files are escaped


def test_cpu_diff_json_omits_gpu_times_and_kernels() -> None:
    doc = diff_json(_cpu_pair())
    assert doc["kernels"] is None and doc["has_gpu"] is False
    assert all("gpu_ms" not in phase for phase in doc["phases"])
    assert doc["ops"]["gone"][0] == {
        "name": "aten::batch_norm",
        "status": "gone",
        "ms": [0.5, None],
        "change_ms": -0.5,
        "calls": [1.0, None],
        "num_merged": [1, 0],
    }
    json.dumps(doc, allow_nan=False)  # canonical JSON accepts it


def test_gpu_diff_lines_state_the_kernel_matching_rule() -> None:
    before = _profile(has_gpu=True, kernels=(_kernel("ampere_sgemm_32x128_nt", 2.0),))
    after = _profile(has_gpu=True, kernels=(_kernel("volta_sgemm_64x64_nt", 4.0),))
    lines = diff_lines(diff_profiles(before, after))
    assert "kernels (ms/step, by change; matched by normalised name, then by launching op)" in lines
    assert f"  rule: {RULE}" in lines
    assert "  +1.000  1.000 -> 2.000 ms  x1 -> x1  sgemm_nt" in lines


def test_compare_text_and_json_end_with_the_changes(gpu_traces: Path, monkeypatch) -> None:
    monkeypatch.chdir(gpu_traces)
    text = invoke(["profile", "compare", GPU_FILES[0], GPU_FILES[1], "--top", "2"])
    assert text.status == 0, text.stderr
    lines = text.stdout.splitlines()
    assert SINGLE_WINDOW_HEADER in lines and lines[-1].startswith("  (")
    doc = invoke(["profile", "compare", GPU_FILES[0], GPU_FILES[1], "--top", "2", "--json"])
    changes = doc.json()["changes"]  # type: ignore[index]
    assert len(changes["kernels"]["changed"]) == 2 and changes["kernel_rule"] == RULE


def test_compare_json_says_how_each_changed_kernel_matched(gpu_traces: Path, monkeypatch) -> None:
    monkeypatch.chdir(gpu_traces)
    doc = invoke(["profile", "compare", GPU_FILES[0], GPU_FILES[1], "--top", "100", "--json"])
    kernels = doc.json()["changes"]["kernels"]  # type: ignore[index]
    by_op = [row for row in kernels["changed"] if row["matched_by"] == "op"]
    assert by_op and all(" -> " in row["name"] and "(same op " in row["name"] for row in by_op)
    assert {row["matched_by"] for row in kernels["changed"]} == {"name", "op"}
    assert all("matched_by" not in row for row in kernels["new"] + kernels["gone"])


def test_compare_top_must_be_a_non_negative_count(gpu_traces: Path) -> None:
    name = str(gpu_traces / GPU_FILES[0])
    assert invoke(["profile", "compare", name, name, "--top", "-1"]).status == 2


def test_phase_changes_carry_the_trials_significance_call() -> None:
    def with_trials(walls: list[float]) -> Profile:
        base = _profile(phases=(PhaseStat(name="forward", wall_ms_per_step=sum(walls) / 3),))
        trials = [
            Trial(index=i, metrics={"forward_wall_ms": w, "img_per_s": 100.0})
            for i, w in enumerate(walls)
        ]
        metrics = base.metrics | {"forward_wall_ms": sum(walls) / 3}
        return msgspec.structs.replace(base, trials=trials, metrics=metrics)

    slower = compare(with_trials([10.0, 10.2, 9.9]), with_trials([15.0, 15.1, 14.8]))
    assert slower.diff is not None
    row = slower.diff.phases[0]
    assert row.significant is True and "Welch t" in row.significance
    lines = diff_lines(slower.diff)
    assert lines[0] == DIFF_HEADER
    assert "phases (calls over the --repeat trials)" in lines
    assert any(line.startswith("  forward") and line.endswith("[significant]") for line in lines)
    same = compare(with_trials([10.0, 10.2, 9.9]), with_trials([10.1, 9.9, 10.0]))
    assert same.diff is not None and same.diff.phases[0].significant is False
