"""The batch search on the sweep page: per series its path (numbered in measured order), every
bound a marker of its own, the recommended point ringed with its evidence; every number and
mark of it equal to `summary <sweep dir> --json`'s `tune`; the page rebuilt with and without
tune.json, never written over it; and the axis helpers that could hang or overlap."""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from libreyolo.document.codec import document_bytes
from libreyolo.document.sweep_io import TUNE_FILE, read_tune_record
from libreyolo.document.sweep_model import MAX_BATCH, MAX_IMGSZ
from libreyolo.document.tune_model import (
    GOALS,
    STOPS,
    Recommendation,
    TuneRecord,
    TuneSeries,
    TuneSettings,
    TuneStep,
    Versus,
)
from libreyolo.render.html import svg, xy
from libreyolo.render.html.tune_charts import search_section
from libreyolo.render.tune_text import tune_lines
from libreyolo.sweep.report import write_report
from tests.conftest import invoke
from tests.render.hostile import HOSTILE, stray_controls
from tests.report import pagecheck
from tests.sweep.test_report import make_point, make_sweep
from tests.tune_records import Curve, knee_record, record_of, saturating, write_tune_sweep

MAXFIT = TuneSettings(goal="maxfit", batch_min=1, batch_max=64, batch_step=2, memory_budget_mb=1100)
LATENCY = TuneSettings(goal="latency", batch_min=1, batch_max=32, batch_step=1, max_latency_ms=30)


def _page(root: Path, out: Path) -> str:
    result = invoke(["profile", "report", str(root), "-o", str(out)])
    assert (result.status, result.stderr) == (0, ""), result.stderr
    return out.read_text(encoding="utf-8")


def _tune_checked(html: str) -> pagecheck.Page:
    """The page parsed, its tune numbers and marks checked against `summary --json`."""
    page = pagecheck.parse(html)
    assert page.external == []
    tuned = pagecheck.Page()
    tuned.numbers = [n for n in page.numbers if n.src[1] == "tune"]
    tuned.marks = [m for m in page.marks if m.src is not None and m.src[1] == "tune"]
    assert pagecheck.check_numbers(tuned) == len(tuned.numbers) + len(tuned.marks) > 0
    return page


@pytest.fixture(scope="module")
def knee_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_tune_sweep(tmp_path_factory.mktemp("knee"), knee_record(train=True))
    write_report(root)
    return root


def _search(html: str) -> str:
    """The batch search section's HTML."""
    match = re.search(r'<section id="search">.*?</section>', html, re.S)
    assert match is not None
    return match.group()


def test_the_search_is_drawn_above_the_table_with_every_number_a_readers(
    knee_sweep: Path, tmp_path: Path
) -> None:
    html = _page(knee_sweep, tmp_path / "page.html")
    page = _tune_checked(html)
    ids = re.findall(r'<section id="([a-z]+)"', html)
    assert ids[:3] == ["overview", "search", "throughput"] and ids.index("table") > 1
    # every measured step is a mark: 6 + 3; the oom one (no img/s) on the axis, no source
    marks = pagecheck.marks(page, "tune-throughput")
    assert len(marks) == 9 and [m.value for m in marks if m.src is None] == [0.0]
    search = _search(html)
    assert search.count('class="ring"') == 2  # batch 8 of imgsz 64, batch 2 of imgsz 96
    assert search.count('d="M') == 1  # the one cross: batch 4 of imgsz 96, out of memory
    orders = re.findall(r'<text class="order"[^>]*>(\d+)</text>', search)
    assert orders == ["1", "2", "3", "6", "4", "5", "1", "2", "3"]  # by batch; 6 measured last
    text = pagecheck.plain_text(pagecheck.parse(search))
    assert (
        "Recommended batch 8 : 400.0 ± 2.0 img/s; 16 adds +0.2 %, not significant "
        "(Welch p 0.65), at 2.0× the memory. Stopped: no_gain ." in text
    )
    assert "✕ out of memory" in text and "▲" not in text


def test_the_grid_pick_is_only_the_fastest_and_the_table_tags_the_answers(
    knee_sweep: Path, tmp_path: Path
) -> None:
    html = _page(knee_sweep, tmp_path / "page.html")
    assert "<h3>Highest img/s per imgsz</h3>" in html and "Recommended per imgsz" not in html
    rows = re.findall(r'<tr class="best"><td[^>]*><a href="#point-\d+">([^<]+)</a>', html)
    assert sorted(rows) == ["b2_s96_amp1", "b8_s64_amp1"]


def test_maxfit_draws_peak_memory_against_the_budget(tmp_path: Path) -> None:
    record = record_of(
        "run", MAXFIT, Curve(640, saturating(8, 120.0), fits_up_to=10, bound="over_budget")
    )
    root = write_tune_sweep(tmp_path / "sweep", record)
    html = _page(root, tmp_path / "page.html")
    page = _tune_checked(html)
    marks = pagecheck.marks(page, "tune-memory")
    assert sorted(m.value for m in marks) == [100.0, 200.0, 400.0, 800.0, 1000.0, 1200.0, 1600.0]
    search = _search(html)
    assert search.count("l5,9h-10z") == 2  # triangles: 16 and 12 over the budget
    assert ">memory budget</text>" in search and "tune-throughput" not in search


def test_the_latency_goal_draws_its_bound_and_a_series_without_an_answer(tmp_path: Path) -> None:
    record = record_of(
        "infer",
        LATENCY,
        Curve(320, saturating(16, 300.0), latency_ms=lambda b: 5 + 2.2 * b),
        Curve(640, saturating(4, 90.0), fits_up_to=0),
    )
    root = write_tune_sweep(tmp_path / "sweep", record)
    html = _page(root, tmp_path / "page.html")
    page = _tune_checked(html)
    counts = Counter(m.chart for m in page.marks if m.chart.startswith("tune"))
    # imgsz 320: 8 steps in both charts; imgsz 640 (nothing fits): its throughput chart only
    assert counts == {"tune-throughput": 9, "tune-latency": 8}
    search = _search(html)
    assert search.count("l5,5l-5,5l-5,-5z") == 4  # 12 and 16 over the bound, in both charts
    assert search.count(">latency bound</text>") == 1
    text = pagecheck.plain_text(pagecheck.parse(search))
    assert (
        "No recommendation: batch 1 does not fit (out of memory, peak 100 MB). Stopped: "
        "none_fits ." in text
    )


def test_a_sweep_without_tune_json_has_no_search(tmp_path: Path) -> None:
    html = _page(make_sweep(tmp_path / "sweep"), tmp_path / "page.html")
    assert 'id="search"' not in html and "<h3>Recommended per imgsz</h3>" in html


def test_report_rebuilds_the_page_and_never_writes_over_the_search_files(
    knee_sweep: Path, tmp_path: Path
) -> None:
    root = tmp_path / "sweep"
    shutil.copytree(knee_sweep, root)
    (root / "tuned_s64_amp1.yaml").write_text("# @package _global_\nbatch: 8\n", encoding="utf-8")
    result = invoke(["profile", "report", str(root)])
    assert (result.status, result.stdout) == (0, f"{root / 'sweep.html'}\n"), result.stderr
    assert 'id="search"' in (root / "sweep.html").read_text(encoding="utf-8")
    for name in (TUNE_FILE, "tuned_s64_amp1.yaml"):
        before = (root / name).read_bytes()
        refused = invoke(["profile", "report", str(root), "-o", str(root / name)])
        assert refused.status == 2 and "it is one of the report's inputs" in refused.stderr
        assert (root / name).read_bytes() == before
    (root / TUNE_FILE).unlink()
    assert invoke(["profile", "report", str(root)]).status == 0
    assert 'id="search"' not in (root / "sweep.html").read_text(encoding="utf-8")


def test_the_sweep_draws_the_search_and_a_broken_tune_json_costs_only_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # no chart: not what is tested
    root = write_tune_sweep(tmp_path / "sweep", knee_record())
    write_report(root)
    assert 'id="search"' in (root / "sweep.html").read_text(encoding="utf-8")
    (root / TUNE_FILE).write_text('{"schema": "libreyolo.tune/v9"}', encoding="utf-8")
    capsys.readouterr()
    write_report(root)
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"sweep page skipped: AnalysisError: failed to read tune record {root / TUNE_FILE}: "
        "unknown schema 'libreyolo.tune/v9'"
    )
    assert (root / "sweep.json").is_file() and not (root / "sweep.html").exists()


@pytest.mark.parametrize(
    ("lo", "hi"),
    [(0.0, 0.0), (5.0, 5.0), (1e17, 1e17), (1e15, 1e15 + 0.125), (7.0, 3.0), (-2.0, -2.0)],
)
def test_nice_ticks_of_equal_values_end_and_cover_them(lo: float, hi: float) -> None:
    ticks = svg.nice_ticks(lo, hi)  # the loop once never passed a top a rounding above lo
    assert 2 <= len(ticks) <= 8 and ticks == sorted(set(ticks))
    assert ticks[0] <= lo and ticks[-1] >= max(lo, hi)


def test_crowded_batch_labels_leave_out_the_ones_that_would_overlap() -> None:
    batches = (1, 2, 4, 8, 16, 32, 33, 34, 36, 40, 48, 64)
    points = tuple(xy.XYPoint(b, 1.0, None, "") for b in batches)
    chart = xy.XYChart((xy.XYSeries("s", points),), "batch", "img/s", log2_x=True)
    svg_text = xy.xy_chart(chart, mark="m", width=1100)
    drawn = re.findall(r'text-anchor="middle">(\d+)</text>', svg_text)
    assert drawn == ["1", "2", "4", "8", "16", "32", "36", "40", "48", "64"]  # 33, 34 left out
    assert svg_text.count('class="mark"') == len(batches)  # every point is still drawn


# --- any record the reader accepts is shown: extreme values and hostile strings ------------

TEXT = st.sampled_from(["", "x", HOSTILE, "w" * 300])
METRIC_VALUE = st.none() | st.just(0) | st.sampled_from([1e-6, 0.5, 1e15]) | st.floats(1e-6, 1e15)
NAMES = ("b1", HOSTILE, "a/b", "n" * 200)


def _steps(draw: st.DrawFn) -> list[TuneStep]:
    steps = []
    for point in draw(st.lists(st.sampled_from(NAMES), max_size=5)):
        fits = draw(st.booleans())
        versus = draw(
            st.none()
            | st.builds(
                Versus,
                batch=st.integers(1, MAX_BATCH),
                gain_pct=st.sampled_from([-1e15, -3.5, 0.0, 12.0, 1e15]),
                significant=st.none() | st.booleans(),
                p_value=st.none() | st.sampled_from([0.0, 0.05, 1.0]),
            )
        )
        steps.append(
            TuneStep(
                point=point,
                batch=draw(st.sampled_from([1, 2, 3, 64, MAX_BATCH])),
                fits=fits,
                bound=None if fits else draw(st.sampled_from([None, "oom", "over_budget"])),
                img_per_s=draw(METRIC_VALUE),
                img_per_s_sd=draw(METRIC_VALUE),
                trials=draw(st.integers(0, 1 << 16)),
                peak_mb=draw(METRIC_VALUE),
                latency_ms=draw(METRIC_VALUE),
                versus=versus,
                reused=draw(st.booleans()),
            )
        )
    return steps


@st.composite
def tune_records(draw: st.DrawFn) -> TuneRecord:
    """A record the reader accepts: every field within its rule, the cross references kept."""
    series, recommended = [], []
    for _ in range(draw(st.integers(0, 3))):
        path = _steps(draw)
        answer = draw(st.none() | st.sampled_from(path)) if path else None
        series.append(
            TuneSeries(
                imgsz=draw(st.none() | st.sampled_from([1, 640, MAX_IMGSZ])),
                amp=draw(st.none() | st.booleans()),
                threads=draw(st.none() | st.just(4)),
                overrides=draw(st.lists(TEXT, max_size=2)),
                path=path,
                stopped=draw(st.sampled_from(STOPS)),
                why=draw(TEXT),
                batch=None if answer is None else answer.batch,
            )
        )
        if answer is not None:
            recommended.append(
                Recommendation(
                    batch=answer.batch,
                    img_per_s=answer.img_per_s,
                    point=answer.point,
                    evidence=draw(st.sampled_from(["", HOSTILE, f"batch {answer.batch}: x"])),
                    train_settings=draw(st.none() | TEXT),
                    config_file=draw(st.none() | st.sampled_from(["tuned.yaml", HOSTILE])),
                )
            )
    settings = TuneSettings(
        goal=draw(st.sampled_from(GOALS)),
        max_latency_ms=draw(METRIC_VALUE),
        memory_budget_mb=draw(METRIC_VALUE),
    )
    return TuneRecord(
        mode="infer", settings=settings, series=series, recommended=recommended, num_points=3
    )


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(tune_records())
def test_every_record_the_reader_accepts_is_shown(record: TuneRecord) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_point(root, 1, 64, 50.0)
        (root / TUNE_FILE).write_bytes(document_bytes(record))
        assert read_tune_record(root / TUNE_FILE) == record
        text = invoke(["profile", "summary", str(root)])
        assert (text.status, text.stderr) == (0, "") and stray_controls(text.stdout) == []
        assert text.stdout.count("\n") == len(tune_lines(record)) + 4  # + the table
        assert invoke(["profile", "summary", str(root), "--json"]).status == 0
        html = _page(root, root / "page.html")
        search = _search(html)
        assert search.count("<h3>") == len(record.series) and "\x1b" not in html
        assert search.count('class="ring"') <= 2 * len(record.recommended)


def test_a_batch_measured_again_carries_all_its_numbers_once() -> None:
    def step(batch: int, ips: float, ranked: bool) -> TuneStep:
        name = f"b{batch}_s64_amp1"
        return TuneStep(point=name, batch=batch, fits=True, img_per_s=ips, ranked=ranked)

    path = [step(1, 30.0, True), step(2, 50.0, True), step(4, 52.0, True), step(2, 51.0, False)]
    path.append(step(4, 53.0, False))
    record = TuneRecord(
        mode="infer",
        settings=TuneSettings(rank_steps=2, batch_max=4),
        series=[TuneSeries(imgsz=64, path=path, stopped="batch_max", batch=2)],
    )
    orders = re.findall(r'<text class="order"[^>]*>([^<]*)</text>', search_section(record))
    # by batch; the ranked 2 and 4 carry no number of their own
    assert orders == ["1", "2, 4", "3, 5"]
