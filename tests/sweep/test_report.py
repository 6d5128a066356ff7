"""The sweep report on hand-made point folders: `sweep.json`, the chart, the table, the reader."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from libreyolo.analysis.sweep import (
    Points,
    chart_series,
    log2_axis,
    ranked_only,
    recommend,
    series_label,
    sweep_record,
)
from libreyolo.cli.sources import open_sweep
from libreyolo.document.codec import document_bytes
from libreyolo.document.convert import to_plain
from libreyolo.document.sweep_files import SWEEP_SCHEMA, collect_points, point_folders
from libreyolo.document.sweep_io import TUNE_FILE
from libreyolo.document.sweep_model import SweepRecord, SweepRow
from libreyolo.document.tune_model import TuneRecord, TuneSeries, TuneSettings, TuneStep
from libreyolo.render.sweep_text import sweep_lines
from libreyolo.sweep.chart import INSTALL_HINT, RANKED_LABEL, draw
from libreyolo.sweep.report import write_report

ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
RECORD_KEYS = {
    "schema",
    "sweep_dir",
    "points",
    "num_points",
    "num_ok",
    "num_reused",
    "num_failed",
    "num_interrupted",
    "num_missing",
    "recommended",
    "chart",
}
POINT_KEYS = {
    "status",
    "reason",
    "code",
    "overrides",
    "batch",
    "imgsz",
    "amp",
    "threads",
    "amp_effective",
    "device_memory_mb",
    "exec",
    "compile_s",
    "export_s",
    "profile",
    "metrics",
    "verdict",
    "reused",
}


def make_point(
    root: Path,
    batch: int,
    imgsz: int,
    ips: float | None,
    *,
    amp: bool = True,
    amp_ran: bool | None = None,
    thrash: bool = False,
    contended: bool = False,
    status: dict[str, Any] | None = None,
    efficiency: dict[str, Any] | None = None,
) -> str:
    """One point folder as a sweep leaves it; `ips=None` makes a failed point (oom). Its MFU is
    ips / 1000 against a measured peak and it has no energy (a CPU's), unless `efficiency`
    gives those metrics."""
    name = f"b{batch}_s{imgsz}_amp{int(amp)}"
    folder = root / name
    (folder / "infer").mkdir(parents=True)
    overrides = [f"batch={batch}", f"imgsz={imgsz}", f"amp={amp}"]
    request = {"config": {"batch": batch, "imgsz": imgsz, "amp": amp}, "overrides": overrides}
    (folder / "point.json").write_text(json.dumps(request), encoding="utf-8")
    if ips is None:
        record = {"status": "failed", "reason": "boom", "code": "oom", "profile": None}
    else:
        metrics = {
            "img_per_s": ips,
            "step_ms": 1000 * batch / ips,
            "latency_p50_ms": 1000 * batch / ips,
            "peak_vram_mb": 100.0 * batch,
            "peak_rss_mb": 500.0 + 10 * batch,
            "memory_pressure": thrash,
            "cpu_wait_frac": 0.45 if contended else 0.01,
            "contended": contended,
            "bound": "contended" if contended else "compute",
            "not_headline": 1,
            "achieved_tflops": ips / 250,
            "mfu": ips / 1000,
            "peak_source": "measured",
            "energy_j_per_img": None,
        } | (efficiency or {})
        ran = amp if amp_ran is None else amp_ran
        verdict = {"bound": metrics["bound"]}
        profile = {"metrics": metrics, "verdict": verdict, "run": {"amp": ran}}
        (folder / "infer" / "profile.json").write_text(json.dumps(profile), encoding="utf-8")
        record = {"status": "ok", "reason": "", "code": "", "profile": "infer/profile.json"}
    record |= {"overrides": overrides, **(status or {})}
    (folder / "status.json").write_text(json.dumps(record), encoding="utf-8")
    return name


def make_sweep(root: Path) -> Path:
    """Five points: two imgsz, batches 1/2/4, one failed (oom), one thrashing."""
    make_point(root, 1, 64, 50.0)
    make_point(root, 2, 64, 80.0)
    make_point(root, 4, 64, 120.0, thrash=True)
    make_point(root, 1, 96, 30.0)
    make_point(root, 2, 96, None)
    return root


def test_write_report_records_points_and_draws_a_png(tmp_path: Path) -> None:
    report = write_report(make_sweep(tmp_path))
    data = json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))
    assert data == report.data
    assert set(data) == RECORD_KEYS
    assert data["schema"] == SWEEP_SCHEMA
    assert set(data["points"]["b1_s64_amp1"]) == POINT_KEYS
    assert data["points"]["b1_s64_amp1"]["metrics"]["img_per_s"] == 50.0
    assert "not_headline" not in data["points"]["b1_s64_amp1"]["metrics"]
    assert data["num_points"] == 5 and data["num_failed"] == 1 == report.num_failed
    assert data["recommended"] == {"64": "b2_s64_amp1", "96": "b1_s96_amp1"}
    assert data["chart"] == "sweep.png"
    png = tmp_path / "sweep.png"
    head = png.read_bytes()[:8]
    assert head == PNG_MAGIC and png.stat().st_size > 1000
    image = pytest.importorskip("PIL.Image")
    with image.open(png) as img:
        assert img.format == "PNG" and img.size[0] > 100 and img.size[1] > 100


def test_without_matplotlib_the_chart_is_skipped_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    report = write_report(make_sweep(tmp_path))
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "chart skipped" in err and INSTALL_HINT in err
    assert report.data["chart"] is None
    assert json.loads((tmp_path / "sweep.json").read_text("utf-8"))["chart"] is None
    assert not (tmp_path / "sweep.png").exists()


def test_a_stale_chart_is_removed_when_it_cannot_be_redrawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_report(make_sweep(tmp_path))
    assert (tmp_path / "sweep.png").is_file()
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert write_report(tmp_path).data["chart"] is None
    assert not (tmp_path / "sweep.png").exists()


def test_chart_series_drops_failed_points_and_sorts_by_batch(tmp_path: Path) -> None:
    data = sweep_record(
        str(tmp_path), collect_points(tmp_path, point_folders(make_sweep(tmp_path)))
    )
    assert chart_series(data.points) == {
        (64, True, None, None): [(1, 50.0), (2, 80.0), (4, 120.0)],
        (96, True, None, None): [(1, 30.0)],
    }


def test_chart_labels_say_when_amp_had_no_effect(tmp_path: Path) -> None:
    make_point(tmp_path, 1, 64, 50.0, amp=True, amp_ran=False)  # a CPU: --half did nothing
    make_point(tmp_path, 1, 64, 51.0, amp=False)
    make_point(tmp_path, 1, 96, 40.0, amp=True)
    points = collect_points(tmp_path, point_folders(tmp_path))
    assert points["b1_s64_amp1"].amp_effective is False
    assert series_label(points, (64, True, None, None)) == "imgsz 64, amp on (no effect)"
    assert series_label(points, (64, False, None, None)) == "imgsz 64, amp off"
    assert series_label(points, (96, True, None, None)) == "imgsz 96, amp on"
    assert series_label(points, (96, True, 2, None)) == "imgsz 96, amp on, 2 threads"


def test_a_threads_axis_draws_one_line_per_thread_count(tmp_path: Path) -> None:
    for threads, ips in ((1, 40.0), (2, 70.0)):
        root = tmp_path / f"t{threads}"
        folder = root / make_point(root, 1, 64, ips)
        request = json.loads((folder / "point.json").read_text(encoding="utf-8"))
        request["config"]["threads"] = threads
        (folder / "point.json").write_text(json.dumps(request), encoding="utf-8")
    points = collect_points(tmp_path, point_folders(tmp_path))
    assert chart_series(points) == {
        (64, True, 1, None): [(1, 40.0)],
        (64, True, 2, None): [(1, 70.0)],
    }


def test_no_ok_point_means_no_chart_and_no_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_point(tmp_path, 1, 64, None)
    assert write_report(tmp_path).data["chart"] is None
    assert capsys.readouterr().err == ""
    assert not (tmp_path / "sweep.png").exists()


def test_log2_axis_for_powers_of_two_or_a_range_of_two_doublings() -> None:
    assert log2_axis({1, 2, 8})
    assert log2_axis({1, 2, 4, 8, 16, 24, 32, 64})  # a tune search's refinement
    assert not log2_axis({1, 3})
    assert log2_axis({8, 16, 24, 32})  # two doublings
    assert not log2_axis({8, 16, 24})
    assert not log2_axis({4})
    assert not log2_axis({0, 8})


def test_a_point_without_status_is_a_crash_and_timing_keys_are_kept(tmp_path: Path) -> None:
    timing = {"measure_s": 1.5, "point_s": 2.0, "lease_wait_s": 0.0, "held_device": "cpu"}
    make_point(tmp_path, 1, 64, 50.0, status=timing)
    make_point(tmp_path, 2, 64, 60.0)
    (tmp_path / "b2_s64_amp1" / "status.json").unlink()
    points = write_report(tmp_path).data["points"]
    assert points["b2_s64_amp1"]["status"] == "failed"
    assert points["b2_s64_amp1"]["code"] == "crashed"
    assert {k: points["b1_s64_amp1"][k] for k in timing} == timing
    assert set(points["b2_s64_amp1"]) == POINT_KEYS


def test_point_folders_skip_hidden_folders_and_stop_at_the_depth_limit(tmp_path: Path) -> None:
    make_point(tmp_path, 1, 64, 50.0)
    for hidden in (tmp_path / ".hydra", tmp_path / "a" / "b" / "c" / "d"):
        hidden.mkdir(parents=True)
        (hidden / "point.json").write_text("{}", encoding="utf-8")
    assert point_folders(tmp_path) == [tmp_path / "b1_s64_amp1"]


def test_table_lines_sort_by_throughput_and_end_with_the_counts(tmp_path: Path) -> None:
    record = write_report(make_sweep(tmp_path)).record
    lines = sweep_lines(record)
    header = ["point", "status", "img/s", "MFU", "VRAM", "MB", "RSS", "MB", "thrash"]
    header += ["contended", "verdict"]
    assert lines[0].split() == header  # no J/img: no point measured its energy
    names = [line.split()[0] for line in lines[1:6]]
    assert names == ["b4_s64_amp1", "b2_s64_amp1", "b1_s64_amp1", "b1_s96_amp1", "b2_s96_amp1"]
    assert lines[1].split()[2:9] == ["120.0", "12%", "400.0", "540.0", "yes", "no", "compute"]
    assert lines[5].endswith("oom: boom")
    assert lines[6:] == [
        "recommended for imgsz 64: b2_s64_amp1",
        "recommended for imgsz 96: b1_s96_amp1",
        "1 of 5 points failed",
    ]


def test_a_contended_point_is_marked_and_never_recommended(tmp_path: Path) -> None:
    make_point(tmp_path, 1, 64, 50.0)
    make_point(tmp_path, 2, 64, 90.0, contended=True)  # fastest, but measured on a busy host
    report = write_report(tmp_path)
    data = report.data
    assert data["recommended"] == {"64": "b1_s64_amp1"}
    assert data["points"]["b2_s64_amp1"]["metrics"]["contended"] is True
    lines = sweep_lines(report.record)
    row = ["b2_s64_amp1", "ok", "90.0", "9%", "200.0", "520.0", "no", "yes", "contended"]
    assert lines[1].split()[:9] == row
    assert lines[-2:] == [
        "contended: 1 point was measured on a busy host and never recommended; measure again "
        "on a quiet machine",
        "all 2 points ok",
    ]
    assert lines[-3] == "recommended for imgsz 64: b1_s64_amp1"


def test_when_every_point_is_contended_none_is_recommended(tmp_path: Path) -> None:
    make_point(tmp_path, 1, 64, 50.0, contended=True)
    report = write_report(tmp_path)
    assert report.data["recommended"] == {}
    assert (
        "recommended: none (no point finished without failure, thrash or contention)"
        in sweep_lines(report.record)
    )


def test_recommend_is_still_exported_by_the_report_module() -> None:
    from libreyolo.sweep import report

    assert report.recommend is recommend


def test_open_sweep_collects_point_folders_when_there_is_no_sweep_json(tmp_path: Path) -> None:
    make_sweep(tmp_path)
    view = open_sweep(str(tmp_path))
    assert view is not None
    data = to_plain(view.record)
    assert isinstance(data, dict)
    assert set(data) == RECORD_KEYS
    assert data["chart"] is None and data["num_points"] == 5
    assert not (tmp_path / "sweep.json").exists()  # reading writes nothing


def test_python_m_report_rebuilds_the_report_and_exits_1_on_a_failed_point(
    tmp_path: Path,
) -> None:
    make_sweep(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "libreyolo.sweep.report", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "1 of 5 points failed" in done.stdout
    assert (tmp_path / "sweep.json").is_file()
    assert (tmp_path / "sweep.png").read_bytes()[:8] == PNG_MAGIC


def _plan(root: Path, *names: str) -> None:
    plan = {"schema": "libreyolo.sweep-plan/v1", "points": {name: [] for name in names}}
    (root / "sweep_plan.json").write_text(json.dumps(plan), encoding="utf-8")


def test_summary_of_a_stopped_sweep_shows_missing_and_interrupted_points(tmp_path: Path) -> None:
    from tests.conftest import invoke

    stopped = {"status": "interrupted", "reason": "stopped by SIGINT", "code": "interrupted"}
    make_point(tmp_path, 1, 64, 50.0)
    make_point(tmp_path, 2, 64, 80.0)
    make_point(tmp_path, 4, 64, None, status=stopped)
    _plan(tmp_path, "b1_s64_amp1", "b2_s64_amp1", "b4_s64_amp1", "b8_s64_amp1")
    result = invoke(["profile", "summary", str(tmp_path)])  # killed: no sweep.json yet
    assert result.status == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[3].split()[:2] == ["b4_s64_amp1", "interrupted"]
    assert lines[3].endswith("interrupted: stopped by SIGINT")
    assert lines[4].split()[:2] == ["b8_s64_amp1", "missing"]
    assert lines[4].endswith("missing: not run yet")
    assert lines[-1] == "2 of 4 points ok, 1 interrupted, 1 missing"
    data = write_report(tmp_path).data  # the sweep.json of the same folder agrees
    assert list(data["points"]) == ["b1_s64_amp1", "b2_s64_amp1", "b4_s64_amp1", "b8_s64_amp1"]
    assert (data["num_points"], data["num_ok"], data["num_interrupted"]) == (4, 2, 1)
    assert (data["num_missing"], data["num_failed"]) == (1, 0)
    assert invoke(["profile", "summary", str(tmp_path)]).stdout.splitlines()[-1] == lines[-1]


@pytest.mark.parametrize(
    ("statuses", "line"),
    [
        (["ok", "ok"], "all 2 points ok"),
        (["ok", "reused"], "all 2 points ok, 1 reused"),
        (["ok", "failed"], "1 of 2 points failed"),
        (["reused", "failed", "missing"], "1 of 3 points ok, 1 failed, 1 missing, 1 reused"),
        (["missing"], "0 of 1 point ok, 1 missing"),
    ],
)
def test_the_count_line_never_calls_an_incomplete_sweep_all_ok(
    statuses: list[str], line: str
) -> None:
    points = {
        f"p{i}": SweepRow(
            status="ok" if s == "reused" else s,  # type: ignore[arg-type]
            reused=s == "reused",
            imgsz=64,
        )
        for i, s in enumerate(statuses)
    }
    data = SweepRecord(points=points, recommended={})
    assert sweep_lines(data)[-1] == line


def test_an_ok_point_whose_profile_is_gone_is_not_ok(tmp_path: Path) -> None:
    make_point(tmp_path, 1, 64, 50.0)
    (tmp_path / "b1_s64_amp1" / "infer" / "profile.json").unlink()
    entry = collect_points(tmp_path, point_folders(tmp_path))["b1_s64_amp1"]
    assert (entry.status, entry.code) == ("failed", "no_profile")
    assert entry.reason == "profile missing or unreadable: infer/profile.json"


@pytest.mark.parametrize(
    ("points", "problem"),
    [
        ({"a": 1}, "points['a'] is an integer, not an object"),
        ({"a": {}}, "points['a'].status is missing"),
        (
            {"a": {"status": ["ok"], "metrics": [1], "imgsz": {}}, "b": {"status": "ok"}},
            "points['a'].status is a list, not one of ok, failed, interrupted, missing",
        ),
    ],
)
def test_a_malformed_sweep_json_is_one_line_naming_the_field_never_a_traceback(
    tmp_path: Path, points: dict[str, Any], problem: str
) -> None:
    from libreyolo.document.sweep_validate import HINT
    from tests.conftest import invoke

    record = {"schema": SWEEP_SCHEMA, "points": points, "recommended": [1]}
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    result = invoke(["profile", "summary", str(tmp_path)])
    assert (result.status, result.stdout) == (1, "")
    assert (
        result.stderr == f"failed to read sweep {path}: invalid sweep record: {problem} ({HINT})\n"
    )


def test_a_grid_hydra_cannot_plan_still_runs_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from omegaconf import OmegaConf

    from libreyolo.sweep import app

    def moved(config: object) -> None:
        raise ImportError("No module named 'hydra._internal.core_plugins.basic_sweeper'")

    monkeypatch.setattr(app, "grid_plan", moved)
    roots: list[Path] = []
    monkeypatch.setattr(app, "_ROOTS", roots)
    monkeypatch.setattr(app, "_DATED", [])
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path / "s"), "subdir": "x"}}})
    app.SweepReportCallback().on_multirun_start(config)
    assert roots == [(tmp_path / "s").resolve()]
    assert capsys.readouterr().err == (
        "warning: no sweep plan (ImportError: No module named "
        "'hydra._internal.core_plugins.basic_sweeper'): points that never run will not be "
        "listed as missing\n"
    )
    assert not (tmp_path / "s" / "sweep_plan.json").exists()


def _ranked_search(root: Path) -> TuneRecord:
    """A knee search over `make_sweep`'s imgsz 64 points: 1 and 4 ranked only, 2 ranked and
    then measured in full."""
    steps = [
        TuneStep(point="b1_s64_amp1", batch=1, fits=True, ranked=True),
        TuneStep(point="b2_s64_amp1", batch=2, fits=True, ranked=True),
        TuneStep(point="b4_s64_amp1", batch=4, fits=True, ranked=True),
        TuneStep(point="b2_s64_amp1", batch=2, fits=True),
    ]
    record = TuneRecord(
        mode="infer",
        settings=TuneSettings(rank_steps=2),
        series=[TuneSeries(imgsz=64, path=steps, stopped="batch_max", batch=2)],
    )
    (root / TUNE_FILE).write_bytes(document_bytes(record))
    return record


def test_ranked_only_names_the_points_never_measured_in_full(tmp_path: Path) -> None:
    assert ranked_only(_ranked_search(tmp_path)) == {"b1_s64_amp1", "b4_s64_amp1"}
    assert ranked_only(None) == frozenset()


def _pixel(png: bytes, at: tuple[float, float]) -> tuple[int, ...]:
    """The RGB of the PNG's pixel at display coordinates `at` (matplotlib's: origin bottom
    left)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    x, y = at
    return tuple(image.getpixel((round(x), image.height - round(y))))


def _centres(points: Points, ranked: frozenset[str]) -> dict[int, tuple[float, float]]:
    """Where `write_chart` draws the imgsz 64 points of `make_sweep` (display coordinates),
    and that its legend names the hollow markers when there are any."""
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)  # as write_chart draws it
    try:
        draw(ax, points, ranked)
        fig.tight_layout()
        fig.canvas.draw()
        labels = [text.get_text() for text in ax.get_legend().get_texts()]
        assert (RANKED_LABEL in labels) is bool(ranked)
        at = ((1, 50.0), (2, 80.0), (4, 120.0))
        return {b: tuple(ax.transData.transform((b, ips))) for b, ips in at}
    finally:
        plt.close(fig)


def test_the_chart_draws_a_tune_searchs_ranked_only_points_hollow(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib").use("Agg")
    for root, search in ((tmp_path / "tune", True), (tmp_path / "grid", False)):
        make_sweep(root)
        ranked = ranked_only(_ranked_search(root)) if search else frozenset()
        report = write_report(root)
        assert report.data["chart"] == "sweep.png"
        centres = _centres(report.record.points, ranked)
        png = (root / "sweep.png").read_bytes()
        hollow = {b for b, at in centres.items() if _pixel(png, at) == (255, 255, 255)}
        assert hollow == ({1, 4} if search else set())  # 2 was measured in full
