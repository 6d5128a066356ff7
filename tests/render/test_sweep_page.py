"""The sweep page on sweeps made in the test: a real tiny CPU sweep, and a sweep built from its
real profiles with GPU-like numbers (peak VRAM, the device's memory), a failed, an interrupted
and an unreadable point. Every number and chart mark is checked against the reader's `--json`
for the input its enclosing `data-input` names."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
import signal
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from libreyolo.analysis.report import SweepReport, sweep_report
from libreyolo.analysis.sweep import by_throughput, pareto_front
from libreyolo.document.convert import convert
from libreyolo.document.point_profiles import read_point_profiles
from libreyolo.document.sweep_model import HeadlineMetrics, SweepRecord, SweepRow
from libreyolo.render.html.ours import is_our_page
from libreyolo.render.html.sweep_charts import CPU_MEMORY_LINE
from libreyolo.render.html.sweep_page import sweep_page
from libreyolo.sweep.report import write_report
from tests.conftest import invoke

ROOT = Path(__file__).resolve().parents[2]
VOID = {"meta", "br", "img", "input", "link", "hr", "wbr"}
# (batch, imgsz, img/s, latency p50 ms, peak VRAM MB, contended); None: not an ok point
GRID: dict[str, tuple[int, int, float, float, float, bool] | str] = {
    "b1_s64_amp1": (1, 64, 50.0, 10.0, 100.0, False),
    "b2_s64_amp1": (2, 64, 80.0, 12.0, 200.0, False),
    "b4_s64_amp1": (4, 64, 90.0, 20.0, 400.0, True),
    "b8_s64_amp1": (8, 64, 85.0, 25.0, 800.0, False),
    "b1_s96_amp1": (1, 96, 30.0, 15.0, 150.0, False),
    "b2_s96_amp1": "failed",
    "b8_s96_amp1": "interrupted",
    "b4_s96_amp1": "unreadable",
}
FRONT = ["b1_s64_amp1", "b2_s64_amp1", "b4_s64_amp1"]
OOM = "CUDA out of memory. Tried to allocate 2.00 GiB"
DEVICE_BYTES = 1_000_000_000


class Marks(HTMLParser):
    """Every element with a `data-src` (numbers and chart marks), with its nearest
    `data-input`; chart marks by `data-mark`; rows by class."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, list[str] | None]] = []
        self.sources: list[tuple[tuple[str, ...], list[Any], float]] = []
        self.marks: dict[str, int] = {}
        self.rows: list[tuple[str, list[str]]] = []  # (class, cell texts) of the points table
        self.front_points = 0
        self.urls: list[str] = []
        self.names: list[str] = []  # the page's `data-points`: what a src's index refers to
        self._row: list[str] | None = None
        self._row_cls = ""

    def _inputs(self) -> tuple[str, ...]:
        for _, inputs in reversed(self.stack):
            if inputs is not None:
                return tuple(inputs)
        return ()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self._element(tag, a)
        if tag not in VOID:
            self.stack.append((tag, json.loads(a["data-input"]) if "data-input" in a else None))
        if tag == "tr":
            self._row, self._row_cls = [], a.get("class", "")
        if tag == "td" and self._row is not None:
            self._row.append("")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, {k: v or "" for k, v in attrs})

    def _element(self, tag: str, a: dict[str, str]) -> None:
        if "data-points" in a:
            self.names = json.loads(a["data-points"])
        for key in ("href", "src"):
            if key in a and not a[key].startswith("#"):
                self.urls.append(a[key])
        if "data-mark" in a:
            self.marks[a["data-mark"]] = self.marks.get(a["data-mark"], 0) + 1
        if "data-src" in a:
            value = a.get("value", a.get("data-value"))
            assert value is not None, a
            self.sources.append((self._inputs(), json.loads(a["data-src"]), float(value)))
        if tag == "polyline" and "front" in a.get("class", ""):
            self.front_points = len(a["points"].split())

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self._row is not None:
            if self._row:  # not the header
                self.rows.append((self._row_cls, self._row))
            self._row = None
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._row:
            self._row[-1] += data


def parse(page: str) -> Marks:
    parser = Marks()
    parser.feed(page)
    parser.close()
    return parser


def _reader_json(reader: str, path: str) -> Any:
    result = invoke(["profile", reader, path, "--json"])
    assert result.status == 0, result.stderr
    return result.json()


def _lookup(data: Any, keys: list[Any], names: list[str]) -> Any:
    """The value at `keys`; an integer where an object is entered is a point's index into
    the page's `data-points` (a sweep page never writes a point's name into a source)."""
    for key in keys:
        data = data[names[key] if isinstance(data, dict) and isinstance(key, int) else key]
    return data


def check_numbers(marks: Marks) -> int:
    """Every `data-src` value equals what its reader prints for its inputs; the count."""
    cache: dict[tuple[str, tuple[str, ...]], Any] = {}
    for inputs, src, value in marks.sources:
        assert len(inputs) == 1, (inputs, src)
        reader = src[0]
        if (reader, inputs) not in cache:
            cache[reader, inputs] = _reader_json(reader, inputs[0])
        shown = _lookup(cache[reader, inputs], src[1:], marks.names)
        assert shown == pytest.approx(value, rel=1e-9, abs=1e-12), (inputs, src)
    return len(marks.sources)


def _real_profile(cpu_sweep: Path) -> dict[str, Any]:
    record = json.loads((cpu_sweep / "sweep.json").read_text(encoding="utf-8"))
    path = Path(record["points"]["b1_s64_amp1"]["profile"])
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _edited(base: dict[str, Any], spec: tuple[int, int, float, float, float, bool]) -> Any:
    batch, imgsz, ips, p50, vram, contended = spec
    profile = copy.deepcopy(base)
    m = profile["metrics"]
    m |= {"img_per_s": ips, "throughput_img_s": ips, "step_ms": 1000 * batch / ips}
    m |= {"latency_p50_ms": p50, "peak_vram_mb": vram, "contended": contended}
    m["latency_p90_ms"] = max(p50, m["latency_p90_ms"])
    m["latency_p99_ms"] = max(m["latency_p90_ms"], m["latency_p99_ms"])
    profile["run"] |= {"batch": batch, "imgsz": imgsz}
    profile["environment"]["device_memory_bytes"] = DEVICE_BYTES
    return profile


def _write_point(root: Path, name: str, config: dict[str, Any], status: dict[str, Any]) -> Path:
    folder = root / name
    (folder / "infer").mkdir(parents=True)
    request = {"config": config, "overrides": [f"{k}={v}" for k, v in config.items()]}
    (folder / "point.json").write_text(json.dumps(request), encoding="utf-8")
    (folder / "status.json").write_text(json.dumps(status), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def built_sweep(cpu_sweep: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """GRID's points, their profiles the real sweep's with GPU-like numbers written in."""
    base = _real_profile(cpu_sweep)
    root = tmp_path_factory.mktemp("built_sweep")
    ok = {"status": "ok", "reason": "", "code": "", "profile": "infer/profile.json"}
    for name, spec in GRID.items():
        batch, imgsz = int(name[1 : name.index("_")]), int(name.split("_s")[1].split("_")[0])
        config = {"batch": batch, "imgsz": imgsz, "amp": True}
        if spec == "failed":
            _write_point(root, name, config, {"status": "failed", "reason": OOM, "code": "oom"})
        elif spec == "interrupted":
            stopped = {"status": "interrupted", "reason": "stopped by SIGTERM", "code": "stop"}
            _write_point(root, name, config, stopped)
        elif spec == "unreadable":  # parses, has metrics, but is no valid profile
            folder = _write_point(root, name, config, ok)
            broken = _edited(base, (batch, imgsz, 20.0, 30.0, 300.0, False))
            broken["metrics"]["latency_p90_ms"] = 1.0
            (folder / "infer" / "profile.json").write_text(json.dumps(broken), encoding="utf-8")
        else:
            assert isinstance(spec, tuple)
            folder = _write_point(root, name, config, ok)
            text = json.dumps(_edited(base, spec))
            (folder / "infer" / "profile.json").write_text(text, encoding="utf-8")
    write_report(root)
    return root


def _report(root: Path) -> SweepReport:
    record = convert(_reader_json("summary", str(root)), SweepRecord)
    profiles, lost = read_point_profiles(root, record)
    return sweep_report(record, str(root), profiles, lost)


def test_marks_per_chart_count_the_ok_points_with_that_value(built_sweep: Path) -> None:
    marks = parse((built_sweep / "sweep.html").read_text(encoding="utf-8"))
    ok = [n for n, spec in GRID.items() if isinstance(spec, tuple) or spec == "unreadable"]
    assert marks.marks["throughput"] == len(ok)  # the unreadable one is ok in the record
    assert marks.marks["tradeoff"] == len(ok)
    assert marks.marks["memory"] == len(ok)
    assert marks.urls == []


def test_every_number_equals_the_readers_json(built_sweep: Path) -> None:
    marks = parse((built_sweep / "sweep.html").read_text(encoding="utf-8"))
    checked = check_numbers(marks)
    scoped = {inputs for inputs, _, _ in marks.sources} - {(str(built_sweep),)}
    assert len(scoped) == 5  # each readable ok point's section reads its own profile
    assert checked > 100


def _rows(marks: Marks) -> dict[str, tuple[str, list[str]]]:
    """The points table by point name: (row class, cells); the first cell holds the tags."""
    return {
        next(n for n in GRID if cells[0].startswith(n)): (cls, cells) for cls, cells in marks.rows
    }


def test_the_pareto_front_is_marked_in_the_chart_and_the_table(built_sweep: Path) -> None:
    marks = parse((built_sweep / "sweep.html").read_text(encoding="utf-8"))
    assert marks.front_points == len(FRONT)
    rows = _rows(marks)
    assert sorted(n for n, (_, cells) in rows.items() if "Pareto" in cells[0]) == FRONT


def test_recommended_rows_are_best_and_unfinished_rows_say_why(built_sweep: Path) -> None:
    rows = _rows(parse((built_sweep / "sweep.html").read_text(encoding="utf-8")))
    record = _reader_json("summary", str(built_sweep))
    best = sorted(n for n, (cls, _) in rows.items() if cls == "best")
    assert best == sorted(record["recommended"].values()) == ["b1_s96_amp1", "b8_s64_amp1"]
    assert all("recommended" in rows[n][1][0] for n in best)
    assert "contended" in rows["b4_s64_amp1"][1][0]  # the fastest, but never recommended
    bad = {n: cells for n, (cls, cells) in rows.items() if cls == "bad"}
    assert set(bad) == {"b2_s96_amp1", "b8_s96_amp1"}
    assert bad["b2_s96_amp1"][5] == "failed" and bad["b2_s96_amp1"][-1] == f"oom: {OOM}"
    assert bad["b8_s96_amp1"][-1] == "stop: stopped by SIGTERM"
    assert len(rows) == len(GRID)


def test_an_unreadable_point_shows_its_reason(built_sweep: Path) -> None:
    report = _report(built_sweep)
    assert set(report.unreadable) == {"b4_s96_amp1"}
    page = sweep_page(report)
    assert "b4_s96_amp1 · profile unreadable" in page
    assert "latency_p50_ms" in report.unreadable["b4_s96_amp1"]


def test_the_memory_chart_draws_the_device_limit(built_sweep: Path) -> None:
    record = _reader_json("summary", str(built_sweep))
    assert record["points"]["b1_s64_amp1"]["device_memory_mb"] == DEVICE_BYTES / 1e6
    page = (built_sweep / "sweep.html").read_text(encoding="utf-8")
    assert page.count('class="guide"') == 1 and "device memory" in page


def test_a_cpu_sweep_says_peak_memory_is_cuda_only(cpu_sweep: Path) -> None:
    assert is_our_page(cpu_sweep / "sweep.html")  # libreyolo-sweep wrote it
    page = (cpu_sweep / "sweep.html").read_text(encoding="utf-8")
    marks = parse(page)
    assert "memory" not in marks.marks and CPU_MEMORY_LINE in page
    assert marks.marks["throughput"] == 6 == marks.marks["tradeoff"]  # every point ok
    # every real CPU point has an MFU (its measured GEMM peak); none has energy, so no card
    assert marks.marks["mfu"] == 6 and "energy" not in marks.marks and "J/img" not in page
    check_numbers(marks)
    lines = invoke(["profile", "summary", str(cpu_sweep)]).stdout.splitlines()
    assert lines[0].split()[3:5] == ["MFU", "VRAM"]  # no J/img column
    assert all(line.split()[3].endswith("%") for line in lines[1:7])


def test_the_report_command_rewrites_the_sweeps_own_page(cpu_sweep: Path) -> None:
    result = invoke(["profile", "report", str(cpu_sweep)])
    assert result.status == 0, result.stderr
    assert result.stdout.strip() == str(cpu_sweep / "sweep.html")


def test_hostile_names_and_reasons_are_escaped() -> None:
    evil = '<img src=x onerror="alert(1)">'
    entry = SweepRow(status="failed", reason=evil, code="<b>", batch=1, imgsz=64)
    record = SweepRecord(points={evil: entry}, num_points=1, num_failed=1, recommended={})
    page = sweep_page(SweepReport("/s<x>", record, {}, {}))
    assert evil not in page and "<b>" not in page.split("<main")[1]
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    assert parse(page).urls == []


def test_a_64_point_page_stays_under_3_mb(built_sweep: Path, tmp_path: Path) -> None:
    """64 copies of the built sweep's readable points: the size and the render time."""
    report = _report(built_sweep)
    record = copy.deepcopy(report.record)
    names = list(report.points)
    points, profiles = {}, {}
    for i in range(64):
        name = names[i % len(names)]
        copy_name = f"{name}_{i}"
        points[copy_name] = record.points[name]
        profiles[copy_name] = report.points[name]
    big = SweepReport(report.source, dataclasses.replace(record, points=points), profiles, {})
    start = time.perf_counter()
    page = sweep_page(big)
    elapsed = time.perf_counter() - start
    assert len(page.encode("utf-8")) < 3 << 20
    assert elapsed < 5.0


def test_a_long_point_name_is_written_twice_however_many_numbers_it_has(built_sweep: Path) -> None:
    """Once in the page's `data-points` list (exact, what sources index), once in its table row;
    every other place (sources, ids, links, tooltips, captions, headings) uses its index or a
    cut-short form, so long names do not bloat the page."""
    report = _report(built_sweep)
    longer = {name: f"{name}_{'long' * 60}" for name in report.record.points}
    record = copy.deepcopy(report.record)
    record = dataclasses.replace(
        record,
        points={longer[n]: row for n, row in record.points.items()},
        recommended={k: longer[v] for k, v in record.recommended.items()},
    )
    page = sweep_page(
        SweepReport(
            report.source,
            record,
            {longer[n]: p for n, p in report.points.items()},
            {longer[n]: why for n, why in report.unreadable.items()},
        )
    )
    assert {name: page.count(name) for name in longer.values()} == dict.fromkeys(longer.values(), 2)
    assert parse(page).names == by_throughput(record.points)
    ids = re.findall(r'id="(point-[^"]*)"', page)
    assert ids == [f"point-{i}" for i in range(len(ids))] and len(ids) == 6  # ok points


@pytest.fixture
def alarm() -> Iterator[None]:
    """A TimeoutError after 10 s: a page that never finishes fails the test."""

    def stop(signum: int, frame: object) -> None:
        raise TimeoutError("the sweep page took over 10 s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, 10.0)
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def test_two_points_a_rounding_apart_are_drawn_without_hanging(alarm: None) -> None:
    # their round ticks would be closer than floats tell apart: the tick loop never advanced
    def point(ips: float) -> SweepRow:
        metrics = HeadlineMetrics(img_per_s=ips, step_ms=10.0)
        return SweepRow(status="ok", batch=1, imgsz=64, amp=True, metrics=metrics)

    record = SweepRecord(points={"a": point(100.0), "b": point(math.nextafter(100.0, 200.0))})
    marks = parse(sweep_page(SweepReport("/s", record, {}, {})))
    assert marks.marks["tradeoff"] == 2 and marks.marks["throughput"] == 2


@pytest.mark.parametrize(
    ("pairs", "front"),
    [
        ({"a": (10.0, 50.0)}, ["a"]),
        ({"a": (10.0, 50.0), "b": (12.0, 80.0), "c": (20.0, 70.0)}, ["a", "b"]),
        ({"a": (10.0, 50.0), "b": (10.0, 50.0)}, ["a", "b"]),  # equal: neither beats the other
        ({"a": (10.0, 50.0), "b": (10.0, 60.0)}, ["b"]),  # same latency, more img/s wins
        ({"a": (10.0, 50.0), "b": (12.0, 50.0)}, ["a"]),  # same img/s, lower latency wins
        ({}, []),
    ],
)
def test_pareto_front(pairs: dict[str, tuple[float, float]], front: list[str]) -> None:
    assert pareto_front(pairs) == front
