"""The report pages in headless Chromium: each kind opens without a console error, loads
nothing but itself, draws every chart mark to scale, reads the same with JavaScript off, sorts
its tables, and is kept as a screenshot (README's pictures)."""

from __future__ import annotations

from pathlib import Path

from tests.browser.cdp import Browser
from tests.browser.report_checks import check_page, palette_pixels
from tests.conftest import invoke

BLUE = (0x00, 0x72, 0xB2)  # the palette's first colour: forward, the histogram, first series

SORT_JS = """(() => {
  const table = document.querySelector('#ops table.sortable');
  const th = Array.from(table.tHead.rows[0].cells).find((c) => c.textContent.includes('calls'));
  const col = Array.from(table.tHead.rows[0].cells).indexOf(th);
  const keys = () => Array.from(table.tBodies[0].rows).map(
    (r) => parseFloat(r.cells[col].getAttribute('data-key')));
  th.click();
  const first = keys();
  th.click();
  return [first, keys(), th.getAttribute('aria-sort')];
})()"""


def _write(source: Path, out: Path) -> Path:
    result = invoke(["profile", "report", str(source), "-o", str(out)])
    assert result.status == 0, result.stderr
    return out


def test_inference_profile_page(browser: Browser, cpu_infer_profile: Path, tmp_path: Path) -> None:
    html = _write(cpu_infer_profile, tmp_path / "report.html")
    _, drawn, shot = check_page(browser, html, "report-profile", tmp_path)
    phases = invoke(["profile", "phases", str(cpu_infer_profile), "--json"]).json()
    assert isinstance(phases, dict)
    per_step = phases["per_step"]
    # synced steps stacked by stage (three marks, more with 'other'), unsynced ones one column
    assert len(drawn["steps"]) >= sum(max(len(s["phase_ms"]), 1) for s in per_step)
    assert len(drawn["stages"]) == 3 and "latency" in drawn
    [mfu_bar] = drawn["mfu"]  # the "How far from the limit" card's bar, drawn with a width
    assert mfu_bar[3] > 0
    assert palette_pixels(shot, BLUE) > 2000
    with browser.open(html) as page:
        descending, ascending, state = page.evaluate(SORT_JS)  # type: ignore[misc]
    # first click: largest first (what a profiler's reader looks for); second: reversed
    assert descending == sorted(descending, reverse=True) and ascending == sorted(ascending)
    assert descending != ascending and state == "ascending"


def test_training_profile_page(browser: Browser, cpu_train_profile: Path, tmp_path: Path) -> None:
    html = _write(cpu_train_profile, tmp_path / "report.html")
    _, drawn, _ = check_page(browser, html, "report-profile-train", tmp_path)
    assert {"steps", "phases", "op-mix"} <= set(drawn)


def test_gpu_trace_page(browser: Browser, gpu_traces: Path, tmp_path: Path) -> None:
    html = _write(gpu_traces / "hta_a100_ddp_train_3steps.json.gz", tmp_path / "report.html")
    _, drawn, _ = check_page(browser, html, "report-profile-gpu", tmp_path)
    assert len(drawn["steps"]) == 3 and len(drawn["kernel-mix"]) == 8


def test_comparison_page(
    browser: Browser, cpu_repeat_pair: tuple[Path, Path], tmp_path: Path
) -> None:
    before, after = cpu_repeat_pair
    out = tmp_path / "compare.html"
    result = invoke(["profile", "report", str(before), str(after), "-o", str(out)])
    assert result.status == 0, result.stderr
    _, drawn, _ = check_page(browser, out, "report-compare", tmp_path)
    compare = invoke(["profile", "compare", str(before), str(after), "--json"]).json()
    assert isinstance(compare, dict)
    phases = compare["changes"]["phases"]
    assert len(drawn["phases-wall"]) == 2 * len(phases)


def test_sweep_page(browser: Browser, cpu_sweep: Path, tmp_path: Path) -> None:
    html = cpu_sweep / "sweep.html"
    assert html.is_file()  # written by the sweep
    _, drawn, shot = check_page(browser, html, "report-sweep", tmp_path)
    record = invoke(["profile", "summary", str(cpu_sweep), "--json"]).json()
    assert isinstance(record, dict)
    ok = sum(1 for p in record["points"].values() if p["status"] == "ok")
    assert ok == 6 and len(drawn["throughput"]) == ok and len(drawn["tradeoff"]) == ok
    assert len(drawn["mfu"]) == ok  # MFU by batch, drawn to scale (check_page)
    assert palette_pixels(shot, BLUE) > 200
    with browser.open(html) as page:  # a point's own section opens and shows its verdict
        opened = page.evaluate(
            "(() => { const d = document.querySelector('details'); d.open = true;"
            " return d.querySelector('.verdict').getBoundingClientRect().height; })()"
        )
    assert isinstance(opened, float | int) and opened > 20


def test_tune_sweep_page(browser: Browser, tmp_path: Path) -> None:
    from tests.tune_records import knee_record, write_tune_sweep

    root = write_tune_sweep(tmp_path / "sweep", knee_record(train=True))  # no sweep measured
    html = _write(root, tmp_path / "sweep.html")
    _, drawn, shot = check_page(browser, html, "report-sweep-tune", tmp_path)
    assert len(drawn["tune-throughput"]) == 9  # every measured step, the oom one included
    assert palette_pixels(shot, BLUE) > 200
    with browser.open(html) as page:  # the measured path opens and shows every step
        rows = page.evaluate(
            "(() => { const d = document.querySelector('#search details'); d.open = true;"
            " return d.querySelectorAll('tbody tr').length; })()"
        )
    assert rows == 6
