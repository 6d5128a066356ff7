"""`peak_rss_mb`: the measuring process's own peak resident memory over the window, measured by
a real CPU inference; unknown (null, one note) where /proc/self/clear_refs cannot be written."""

from __future__ import annotations

import gc
import json
import re
from pathlib import Path

import pytest
import torch

from libreyolo.document.files import load
from libreyolo.document.model import HostMemory, Profile
from libreyolo.measure import rss
from libreyolo.measure.from_config import measure_config
from libreyolo.measure.procfs import parse_vm_hwm
from tests.configs import configured
from tests.conftest import invoke

DOCS = Path(__file__).resolve().parents[1] / "fixtures" / "docs"

FREED_BYTES = 400 * 10**6  # held before the window and freed: the window's peak must miss it
NO_RESET = (
    "peak RSS not measured: cannot reset the peak through {path} (No such file or directory), "
    "and the process's peak since it started is not the window's"
)


def _measure(checkpoint: Path, project: Path, *, repeat: int = 1) -> tuple[Profile, Path]:
    cfg = configured(
        "infer",
        {
            "model.weights": str(checkpoint),
            "device.name": "cpu",
            "imgsz": 64,
            "window.warmup": 1,
            "window.runs": 4,
            "window.repeat": repeat,
            "trace": False,
            "threads": 1,  # a quick window on a shared host: what it measures is memory
            # the trials in this process: the memory freed before them is what they must miss
            "window.repeat_in_process": True,
            "project": str(project),
        },
    )
    return measure_config(cfg, [], None, notice=lambda label, text: None)


def _rss_mb() -> float:
    """This process's resident memory now (VmRSS), in MB."""
    found = re.search(r"^VmRSS:\s+(\d+) kB$", Path("/proc/self/status").read_text("ascii"), re.M)
    assert found is not None
    return int(found.group(1)) * 1024 / 1e6


@pytest.fixture(scope="module")
def measured(
    checkpoint: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Profile, Path, float]:
    """Two trials measured right after 400 MB were touched and freed in this process (after a
    first measurement, whose imports and caches would otherwise grow the process meanwhile),
    and the process's RSS while it held them: its peak since start is at least that. (Linux's
    `ru_maxrss` reads the very mark the window resets, so it cannot be the witness.)"""
    _measure(checkpoint, tmp_path_factory.mktemp("warm"))
    held = torch.ones(FREED_BYTES // 4)  # float32, every page written: resident
    holding_mb = _rss_mb()
    del held
    gc.collect()
    return (*_measure(checkpoint, tmp_path_factory.mktemp("project"), repeat=2), holding_mb)


def test_the_window_peak_excludes_memory_freed_before_it(
    measured: tuple[Profile, Path, float],
) -> None:
    aggregate, _, holding_mb = measured
    peaks = [trial.metrics["peak_rss_mb"] for trial in aggregate.trials]
    assert len(peaks) == 2
    for peak in peaks:  # each trial its own window's peak
        assert isinstance(peak, float) and peak > 0
        # a since-start peak would hold the freed 400 MB: the window's is well below it
        assert peak < holding_mb - 0.75 * FREED_BYTES / 1e6


def test_the_profile_stores_it_and_the_readers_show_it(
    measured: tuple[Profile, Path, float],
) -> None:
    _, aggregate_path, _ = measured
    path = aggregate_path.parent / "infer" / "profile.json"  # the last trial
    profile = load(str(path))
    memory = profile.host_memory
    assert isinstance(memory, HostMemory) and memory.peak_rss_bytes is not None
    peak_mb = round(memory.peak_rss_bytes / 1e6, 1)
    assert profile.metrics["peak_rss_mb"] == peak_mb
    assert not [note for note in profile.notes if rss.NOT_MEASURED in note]
    got = invoke(["profile", "get", str(path), "peak_rss_mb"])
    assert (got.status, got.stdout, got.stderr) == (0, f"{peak_mb}\n", "")
    library, baseline = memory.library_rss_bytes, memory.baseline_rss_bytes
    # torch's libraries alone map well over 10 MB; the interpreter with torch holds more
    assert library is not None and library > 10 * 10**6
    # (a warm process in-between: the window needs no more than it held before the model)
    assert baseline is not None and 50 * 10**6 < baseline <= memory.peak_rss_bytes
    baseline_mb = round(baseline / 1e6, 1)
    summary = invoke(["profile", "summary", str(path)])
    line = (
        f"memory   peak RSS {peak_mb} MB over the window (this process's own, {baseline_mb} MB "
        "of it before the model; shared library pages and DataLoader workers not included)"
    )
    assert summary.status == 0 and line in summary.stdout.splitlines()
    as_json = invoke(["profile", "summary", str(path), "--json"]).json()
    assert isinstance(as_json, dict) and as_json["peak_rss_mb"] == peak_mb
    assert as_json["library_rss_mb"] == round(library / 1e6, 1)
    assert as_json["baseline_rss_mb"] == baseline_mb
    on_disk = json.loads(path.read_text(encoding="utf-8"))
    assert on_disk["host_memory"] == {
        "peak_rss_bytes": memory.peak_rss_bytes,
        "library_rss_bytes": library,
        "baseline_rss_bytes": baseline,
    }


def test_a_profile_from_before_the_libraries_were_left_out_says_so(tmp_path: Path) -> None:
    """An older profile's peak (the VmHWM, libraries included, as the docs fixture's) keeps its
    number and its old summary line, and `compare` with a newer one warns that the two are
    not measured alike."""
    old_path = DOCS / "train_yolo9t_cpu_b8_320.profile.json"
    old = json.loads(old_path.read_text(encoding="utf-8"))
    assert old["host_memory"] == {"peak_rss_bytes": 2175111168}
    summary = invoke(["profile", "summary", str(old_path)])
    line = (
        "memory   peak RSS 2175.1 MB over the window (this process; DataLoader workers not "
        "included)"
    )
    assert summary.status == 0 and line in summary.stdout.splitlines()
    new = json.loads(json.dumps(old))
    new["host_memory"] = {
        "peak_rss_bytes": 1_826_000_000,
        "library_rss_bytes": 349_111_168,
        "baseline_rss_bytes": 700_000_000,
    }
    new["metrics"] |= {"peak_rss_mb": 1826.0, "library_rss_mb": 349.1, "baseline_rss_mb": 700.0}
    new_path = tmp_path / "new.profile.json"
    new_path.write_text(json.dumps(new), encoding="utf-8")
    line = (
        "memory   peak RSS 1826.0 MB over the window (this process's own, 700.0 MB of it before "
        "the model; shared library pages and DataLoader workers not included)"
    )
    assert line in invoke(["profile", "summary", str(new_path)]).stdout.splitlines()
    compared = invoke(["profile", "compare", str(old_path), str(new_path), "--json"]).json()
    assert isinstance(compared, dict)
    warning = (
        "peak_rss_mb is not measured alike: the before profile's counts the shared library "
        "pages (it predates leaving them out); measure it again to compare the two"
    )
    assert warning in compared["warnings"]
    same = invoke(["profile", "compare", str(new_path), str(new_path), "--json"]).json()
    assert isinstance(same, dict) and not [w for w in same["warnings"] if "peak_rss" in w]


STATUS_TEXT = (
    "Name:\tpython\nVmHWM:\t  900000 kB\nVmRSS:\t  800000 kB\nRssAnon:\t  600000 kB\n"
    "RssFile:\t  300000 kB\nRssShmem:\t    2000 kB\n"
)


def test_the_peak_leaves_the_library_pages_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status = tmp_path / "status"
    status.write_text(STATUS_TEXT, encoding="ascii")
    monkeypatch.setattr(rss, "STATUS", status)
    monkeypatch.setattr(rss, "CLEAR_REFS", tmp_path / "clear_refs")
    peak = rss.WindowPeakRss()
    peak.start()
    expected = HostMemory(peak_rss_bytes=600000 * 1024, library_rss_bytes=300000 * 1024)
    assert peak.end() == (expected, None)
    assert rss.own_rss_bytes() == 602000 * 1024
    status.write_text(STATUS_TEXT.replace("RssFile", "RssFiles"), encoding="ascii")
    note = f"peak RSS not measured: {status} has no RssFile line (Linux 4.5+)"
    assert peak.end() == (None, note)
    status.unlink()
    assert rss.own_rss_bytes() is None


def test_an_unreadable_status_gives_no_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nVmRSS:\t  1000 kB\n", encoding="ascii")
    monkeypatch.setattr(rss, "STATUS", status)
    peak = rss.WindowPeakRss()
    peak.start()
    assert peak.end() == (None, f"peak RSS not measured: {status} has no VmHWM line")
    never = rss.WindowPeakRss()
    assert never.end() == (None, "peak RSS not measured: the window never started")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Name:\tpython\nVmPeak:\t 900 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 1 kB\n", 123456 * 1024),
        ("VmHWM:\n", None),
        ("VmHWM:\tmany kB\n", None),
        ("VmRSS:\t 1 kB\n", None),
    ],
)
def test_parse_vm_hwm(text: str, expected: int | None) -> None:
    assert parse_vm_hwm(text) == expected
