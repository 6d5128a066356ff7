"""FLOPs, MFU and energy as the readers show them: summary's text line and `--json` object,
compare's deltas, and the report page's "How far from the limit" card. Unknown is said, never
shown as 0."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import msgspec.structs
import pytest

from libreyolo.analysis.compare import compare
from libreyolo.analysis.summary import summarize
from libreyolo.document.files import save
from libreyolo.document.model import FLOP_CONVENTION, Profile
from libreyolo.render.jsondoc import to_json_text
from libreyolo.render.text import to_lines
from libreyolo.render.units import fmt_mfu, fmt_sig
from tests.compute_profiles import CPU_PEAK, TABLE, cpu_profile, forward_flops, gpu_profile
from tests.conftest import invoke
from tests.report import pagecheck

GPU_LINE = (
    "compute  26.1 GFLOP/img (forward 8.7 + backward 17.4) · 5.22 TFLOP/s · MFU 0.5 % of the "
    "H200 datasheet peak (989 TFLOP/s fp16), 0.7 % of the measured GEMM peak (700 TFLOP/s fp16)"
)
ENERGY_LINE = "energy   0.84 J/img · 1.19 img/J · 168 W mean, 700 W limit"


def _lines(profile: Profile) -> list[str]:
    return to_lines(summarize(profile))


@pytest.mark.parametrize(
    ("value", "shown"),
    [(7.71, "7.71"), (26.1, "26.1"), (8.7, "8.7"), (989.4, "989"), (0.10712, "0.107"),
     (1234.5, "1230"), (9.996, "10"), (0.0312, "0.0312")],
)  # fmt: skip
def test_three_significant_digits(value: float, shown: str) -> None:
    assert fmt_sig(value) == shown


def test_mfu_is_a_whole_percent_with_one_decimal_under_ten() -> None:
    assert [fmt_mfu(v) for v in (0.3312, 0.0612, 0.0996, 1.0)] == [
        "33 %",
        "6.1 %",
        "10 %",
        "100 %",
    ]


def test_gpu_training_lines_follow_the_step_line() -> None:
    lines = _lines(gpu_profile())
    assert lines[0].startswith("model ?  |  200.0 img/s  |  step 20.0 ms")
    assert lines[1:3] == [GPU_LINE, ENERGY_LINE]
    assert lines[3].startswith("GPU util 95%")


@pytest.mark.parametrize(
    ("profile", "line"),
    [
        (
            lambda: cpu_profile(flops=forward_flops(0.1)),
            "compute  0.1 GFLOP/img · 0.02 TFLOP/s · MFU 6.1 % of the measured GEMM peak "
            "(0.326 TFLOP/s fp32)",
        ),
        (
            lambda: cpu_profile(
                flops=forward_flops(0.1), peaks=(msgspec.structs.replace(CPU_PEAK, contended=True),)
            ),
            "compute  0.1 GFLOP/img · 0.02 TFLOP/s · MFU 6.1 % of the measured GEMM peak "
            "(0.326 TFLOP/s fp32, measured on a busy host)",
        ),
        (
            lambda: cpu_profile(flops=forward_flops(0.1), peaks=()),
            "compute  0.1 GFLOP/img · 0.02 TFLOP/s · MFU unknown (no peak for this device, see "
            "notes)",
        ),
        (lambda: cpu_profile(), "compute  FLOPs unknown (the count failed, see notes)"),
    ],
    ids=["measured", "busy-host", "no-peak", "count-failed"],
)
def test_cpu_compute_line(profile: Callable[[], Profile], line: str) -> None:
    lines = _lines(profile())
    assert lines[1] == line
    assert not any(x.startswith("energy ") for x in lines)  # no energy: no line


def test_a_v1_file_says_it_has_no_count(reference_v1: Path) -> None:
    result = invoke(["profile", "summary", str(reference_v1 / "train_cpu.profile.json")])
    assert result.stdout.splitlines()[1] == "compute  FLOPs unknown (no count in this file)"
    data = invoke(["profile", "summary", str(reference_v1 / "train_cpu.profile.json"), "--json"])
    compute = data.json()["compute"]  # type: ignore[index]
    assert compute["flops_unknown"] == "no count in this file"
    assert compute["peaks"] == [] and compute["energy"] is None and compute["mfu"] is None


def test_summary_json_compute_object() -> None:
    compute = json.loads(to_json_text(summarize(gpu_profile())))["compute"]
    assert compute == {
        "math_dtype": "fp16",
        "flops_per_image": 26100000000,
        "forward_flops_per_image": 8700000000,
        "backward_flops_per_image": 17400000000,
        "flops_unknown": None,
        "achieved_tflops": 5.22,
        "peaks": [
            {
                "source": "table",
                "dtype": "fp16",
                "tflops": 989.4,
                "reference": TABLE.reference,
                "mfu": 0.005276,
                "contended": False,
            },
            {
                "source": "measured",
                "dtype": "fp16",
                "tflops": 700.0,
                "reference": "best of 5 runs of 8192x8192 fp16 GEMMs",
                "mfu": 0.007457,
                "contended": False,
            },
        ],
        "peak_source": "table",
        "mfu": 0.005276,
        "mfu_table": 0.005276,
        "mfu_measured": 0.007457,
        "convention": FLOP_CONVENTION,
        "energy": {
            "energy_j_per_img": 0.84,
            "img_per_j": 1.19,
            "mean_power_w": 168.0,
            "power_limit_w": 700.0,
        },
    }


def test_compare_calls_other_flops_different_work_not_a_regression() -> None:
    before, after = cpu_profile(flops=forward_flops(0.1)), gpu_profile()
    result = compare(before, after)
    assert result.compute.same_work is False
    assert (
        "the profiles count different FLOPs per image (0.1 vs 26.1 GFLOP): a different model, "
        "size, input size or mode, so img/s and MFU compare different work; that is no regression"
    ) in result.warnings
    assert (
        "MFU is against different peaks (measured fp32 vs table fp16): compare the achieved TFLOP/s"
    ) in result.warnings
    lines = to_lines(result)
    assert "FLOPs/img      0.1 -> 26.1 GFLOP (+26000%)  [different work: not a regression]" in lines
    assert "TFLOP/s        0.02 -> 5.22 (+26000%)" in lines
    assert "MFU            6.1 % -> 0.5 % (-5.6 points)" in lines
    assert "J/img          ? -> 0.84" in lines
    data = json.loads(to_json_text(result))["compute"]
    keys = {"flops_per_image", "achieved_tflops", "mfu", "energy_j_per_img", "same_work"}
    assert set(data) == keys
    assert data["mfu"]["change_points"] == -5.6074 and data["same_work"] is False


def test_compare_of_the_same_work_warns_of_nothing() -> None:
    result = compare(gpu_profile(), gpu_profile())
    assert result.compute.same_work is True and result.warnings == ()
    assert not any("different work" in line for line in to_lines(result))


def test_the_page_card_shows_the_readers_numbers(tmp_path: Path) -> None:
    source = save(gpu_profile(), tmp_path / "profile.json")
    out = tmp_path / "report.html"
    assert invoke(["profile", "report", str(source), "-o", str(out)]).status == 0
    page = pagecheck.parse(out.read_text(encoding="utf-8"))
    pagecheck.check_numbers(page)
    shown = {tuple(n.src) for n in page.numbers}
    for key in ("flops_per_image", "achieved_tflops", "mfu"):
        assert ("summary", "compute", key) in shown
    assert ("summary", "compute", "energy", "energy_j_per_img") in shown
    assert ("summary", "compute", "peaks", 1, "tflops") in shown
    [bar] = pagecheck.marks(page, "mfu")
    assert bar.value == 0.005276
    text = pagecheck.plain_text(page)
    assert "How far from the limit" in text and TABLE.reference in text
    assert " ".join(FLOP_CONVENTION.split()) in text


def test_the_page_card_of_a_v1_file_says_unknown(reference_v1: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    source = reference_v1 / "infer_b1.profile.json"
    assert invoke(["profile", "report", str(source), "-o", str(out)]).status == 0
    page = pagecheck.parse(out.read_text(encoding="utf-8"))
    assert "FLOPs unknown (no count in this file)." in pagecheck.plain_text(page)
    assert pagecheck.marks(page, "mfu") == []
