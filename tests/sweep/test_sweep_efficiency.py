"""MFU and energy in a sweep, on hand-made point folders: each row copies them from its point's
profile, `summary --json` prints them, the table shows MFU always and J/img only where a point
measured its energy, and the page draws MFU by batch and, with energy, J/img against img/s."""

from __future__ import annotations

import json
from pathlib import Path

from libreyolo.document.sweep_files import collect_points, point_folders
from libreyolo.render.html.sweep_charts import NO_MFU_LINE
from libreyolo.render.sweep_text import fmt_joules, fmt_mfu
from tests.conftest import invoke
from tests.render.test_sweep_page import check_numbers, parse
from tests.report import pagecheck
from tests.sweep.test_report import make_point, make_sweep

# batch -> (img/s, MFU, J/img); None: unknown (the count failed, no energy reading)
GPU_GRID: dict[int, tuple[float, float | None, float | None]] = {
    1: (50.0, 0.05, 0.0234),
    2: (80.0, 0.08, 0.0181),  # fewer J/img at more img/s than batch 1: only b2 and b4 on the front
    4: (120.0, 0.004, 0.0195),
    8: (110.0, None, None),
}
KEYS = ("achieved_tflops", "mfu", "peak_source", "energy_j_per_img")  # copied to each row
TABLE = [
    "point        status  img/s  MFU  J/img   VRAM MB  RSS MB  thrash  contended  verdict",
    "b4_s64_amp1  ok      120.0  <1%  0.0195  400.0    540.0   no      no         compute",
    "b8_s64_amp1  ok      110.0  -    -       800.0    580.0   no      no         compute",
    "b2_s64_amp1  ok      80.0   8%   0.0181  200.0    520.0   no      no         compute",
    "b1_s64_amp1  ok      50.0   5%   0.0234  100.0    510.0   no      no         compute",
    "recommended for imgsz 64: b4_s64_amp1",
    "all 4 points ok",
]


def gpu_sweep(root: Path) -> Path:
    """GPU_GRID's points, each with its table peak (b8's MFU and energy unknown)."""
    for batch, (ips, mfu, joules) in GPU_GRID.items():
        known = mfu is not None
        efficiency = {
            "mfu": mfu,
            "achieved_tflops": ips / 250 if known else None,
            "peak_source": "table" if known else None,
            "energy_j_per_img": joules,
        }
        make_point(root, batch, 64, ips, efficiency=efficiency)
    return root


def _summary_json(root: Path) -> dict[str, object]:
    result = invoke(["profile", "summary", str(root), "--json"])
    assert (result.status, result.stderr) == (0, "")
    data = result.json()
    assert isinstance(data, dict)
    return data


def test_rows_carry_mfu_and_energy_and_summary_json_prints_them(tmp_path: Path) -> None:
    points = _summary_json(gpu_sweep(tmp_path))["points"]
    assert isinstance(points, dict)
    assert {k: points["b1_s64_amp1"]["metrics"][k] for k in KEYS} == {
        "achieved_tflops": 0.2,
        "mfu": 0.05,
        "peak_source": "table",
        "energy_j_per_img": 0.0234,
    }
    # unknown is null, never 0 and never a missing key
    assert {k: points["b8_s64_amp1"]["metrics"][k] for k in KEYS} == dict.fromkeys(KEYS)


def test_a_profile_without_the_efficiency_keys_reads_as_unknown(tmp_path: Path) -> None:
    make_point(tmp_path, 1, 64, 50.0)
    profile = tmp_path / "b1_s64_amp1" / "infer" / "profile.json"
    raw = json.loads(profile.read_text(encoding="utf-8"))
    raw["metrics"] = {k: v for k, v in raw["metrics"].items() if k not in KEYS}  # made before
    profile.write_text(json.dumps(raw), encoding="utf-8")
    metrics = _summary_json(tmp_path)["points"]["b1_s64_amp1"]["metrics"]  # type: ignore[index]
    assert {k: metrics[k] for k in KEYS} == dict.fromkeys(KEYS)
    lines = invoke(["profile", "summary", str(tmp_path)]).stdout.splitlines()
    assert lines[1].split()[:4] == ["b1_s64_amp1", "ok", "50.0", "-"]


def test_the_table_shows_mfu_and_j_per_img_where_a_point_measured_energy(tmp_path: Path) -> None:
    result = invoke(["profile", "summary", str(gpu_sweep(tmp_path))])
    assert (result.status, result.stderr) == (0, "")
    assert result.stdout.splitlines() == TABLE


def test_a_cpu_sweep_has_an_mfu_column_and_no_j_per_img_column(tmp_path: Path) -> None:
    lines = invoke(["profile", "summary", str(make_sweep(tmp_path))]).stdout.splitlines()
    assert lines[0].split()[:5] == ["point", "status", "img/s", "MFU", "VRAM"]
    assert "J/img" not in "\n".join(lines)
    assert [line.split()[3] for line in lines[1:6]] == ["12%", "8%", "5%", "3%", "-"]  # failed: -


def test_mfu_and_joules_formats() -> None:
    # a real MFU under one percent never reads as nothing done; above 1: a measured peak low
    shown = [fmt_mfu(v) for v in (None, 0.0, 0.004, 0.0099, 0.01, 0.336, 1.27)]
    assert shown == ["-", "0%", "<1%", "<1%", "1%", "34%", "127%"]
    shown = [fmt_joules(v) for v in (None, 0.0, 0.02341, 1.2, 12.0, 1234.4)]
    assert shown == ["-", "0.00", "0.0234", "1.20", "12.0", "1234"]  # 3 significant digits


def test_an_unusable_efficiency_value_makes_the_point_invalid(tmp_path: Path) -> None:
    make_point(tmp_path, 1, 64, 50.0, efficiency={"mfu": -0.5})
    make_point(tmp_path, 2, 64, 80.0, efficiency={"peak_source": "guess"})
    rows = collect_points(tmp_path, point_folders(tmp_path))
    assert [(r.status, r.code) for r in rows.values()] == [("failed", "invalid")] * 2
    assert rows["b1_s64_amp1"].reason == (
        "infer/profile.json metrics.mfu is -0.5 (out of range 0 or 1e-06..1e+15)"
    )
    assert rows["b2_s64_amp1"].reason == (
        "infer/profile.json metrics.peak_source is 'guess', not one of table, measured"
    )


def _page(root: Path, out: Path) -> pagecheck.Page:
    result = invoke(["profile", "report", str(root), "-o", str(out)])
    assert (result.status, result.stderr) == (0, "")
    text = out.read_text(encoding="utf-8")
    assert check_numbers(parse(text)) > 0  # every number and mark is what summary --json prints
    return pagecheck.parse(text)


def test_the_page_draws_mfu_by_batch_and_the_energy_front(tmp_path: Path) -> None:
    html = tmp_path / "page.html"
    page = _page(gpu_sweep(tmp_path / "sweep"), html)
    text = html.read_text(encoding="utf-8")
    mfu = pagecheck.marks(page, "mfu")
    assert sorted(m.value for m in mfu) == [0.004, 0.05, 0.08]  # the reader's fractions
    assert {m.src[-1] for m in mfu if m.src} == {"mfu"}
    energy = pagecheck.marks(page, "energy")
    assert sorted(m.value for m in energy) == [0.0181, 0.0195, 0.0234]
    assert "a share of the datasheet's dense peak of the GPU" in pagecheck.plain_text(page)
    assert text.count('class="front"') == 2  # latency's and energy's fronts
    caption = pagecheck.plain_text(page)
    assert "the points no other point beats on both (b2_s64_amp1, b4_s64_amp1)" in caption
    assert ">J/img<" in text and ">MFU %<" in text  # the table's columns
    cells = {cells[0][:11]: cells[9:11] for _, cells in parse(text).rows}
    assert cells == {  # MFU % to 0.1, J/img to 3 significant digits
        "b4_s64_amp1": ["0.4", "0.0195"],
        "b8_s64_amp1": ["–", "–"],
        "b2_s64_amp1": ["8.0", "0.0181"],
        "b1_s64_amp1": ["5.0", "0.0234"],
    }
    assert 'href="#energy"' in text


def test_a_page_without_energy_has_no_energy_chart_and_no_j_per_img(tmp_path: Path) -> None:
    html = tmp_path / "page.html"
    page = _page(make_sweep(tmp_path / "sweep"), html)
    text = html.read_text(encoding="utf-8")
    assert len(pagecheck.marks(page, "mfu")) == 4 and not pagecheck.marks(page, "energy")
    assert 'id="energy"' not in text and "J/img" not in text
    assert "a share of the peak of a short GEMM measured on" in pagecheck.plain_text(page)


def test_a_page_without_any_mfu_says_why(tmp_path: Path) -> None:
    unknown = dict.fromkeys(KEYS)
    make_point(tmp_path / "sweep", 1, 64, 50.0, efficiency=unknown)
    make_point(tmp_path / "sweep", 2, 64, 80.0, efficiency=unknown)
    html = tmp_path / "page.html"
    page = _page(tmp_path / "sweep", html)
    assert not pagecheck.marks(page, "mfu") and NO_MFU_LINE in pagecheck.plain_text(page)
