"""`summary <sweep dir>` of a batch search: the answer first (per series the recommendation with
its evidence, or why there is none, and the stop reason; training's settings line), then the
sweep table; `--json` carries tune.json as `tune`; a tune.json that is not ours, or holds a
value no search writes, is one line and exit 1 for every reader of the folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from libreyolo.document.sweep_io import TUNE_FILE
from libreyolo.document.sweep_validate import TUNE_HINT
from libreyolo.sweep.report import write_report
from tests.conftest import invoke
from tests.document.test_tune_io import HAND_WRITTEN
from tests.sweep.test_report import RECORD_KEYS
from tests.test_architecture import _run_blocked
from tests.tune_records import KNEE, Curve, knee_record, record_of, saturating, write_tune_sweep

KNEE_LINES = [
    "tune knee over batch 1..64 (step 2), 9 points measured; a gain counts when significant "
    "and ≥ 5 %",
    "imgsz 64, amp on: recommended batch 8: 400.0 ± 2.0 img/s; 16 adds +0.2 %, not significant "
    "(Welch p 0.65), at 2.0× the memory (stopped: no_gain)",
    "train: batch=8 imgsz=64 amp=true workers=8 (tuned_s64_amp1.yaml)",
    "imgsz 96, amp on: recommended batch 2: 25.0 ± 0.1 img/s; 4 does not fit (out of memory, "
    "peak 400 MB) (stopped: no_fit)",
    "train: batch=2 imgsz=96 amp=true workers=8 (tuned_s96_amp1.yaml)",
]
TABLE_TAIL = [
    "b4_s96_amp1   failed  -      -    -        -       -       -          oom: boom",
    "highest img/s for imgsz 64: b16_s64_amp1",
    "highest img/s for imgsz 96: b2_s96_amp1",
    "1 of 9 points failed",
]
TUNE_KEYS = {"schema", "mode", "settings", "series", "recommended", "num_points"}
SETTINGS_KEYS = {
    "goal",
    "batch_min",
    "batch_max",
    "batch_step",
    "patience",
    "min_gain_pct",
    "percentile",
    "max_latency_ms",
    "memory_budget_mb",
    "remeasure",
    "rank_steps",
}
SERIES_KEYS = {"imgsz", "amp", "threads", "overrides", "path", "stopped", "why", "batch", "prior"}
STEP_KEYS = {
    "point",
    "batch",
    "fits",
    "bound",
    "img_per_s",
    "img_per_s_sd",
    "trials",
    "peak_mb",
    "latency_ms",
    "versus",
    "reused",
    "contended",
    "ranked",
}
VERSUS_KEYS = {"batch", "gain_pct", "significant", "p_value"}
RECOMMENDATION_KEYS = {
    "imgsz",
    "amp",
    "threads",
    "batch",
    "img_per_s",
    "point",
    "evidence",
    "train_settings",
    "config_file",
    "train_command",
}


@pytest.fixture(scope="module")
def tune_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A training search's folder: two series, their points, sweep.json and tune.json."""
    root = write_tune_sweep(tmp_path_factory.mktemp("tune"), knee_record(train=True))
    write_report(root)
    return root


def test_summary_prints_the_answer_then_the_table(tune_sweep: Path) -> None:
    result = invoke(["profile", "summary", str(tune_sweep)])
    assert (result.status, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[:5] == KNEE_LINES
    header = "point         status  img/s  MFU  VRAM MB  RSS MB  thrash  contended  verdict"
    assert lines[5] == header
    assert lines[-4:] == TABLE_TAIL


def test_summary_json_carries_tune_json_under_tune(tune_sweep: Path) -> None:
    result = invoke(["profile", "summary", str(tune_sweep), "--json"])
    assert (result.status, result.stderr) == (0, "")
    data = result.json()
    assert isinstance(data, dict) and set(data) == RECORD_KEYS | {"tune"}
    tune = data["tune"]
    assert tune == json.loads((tune_sweep / TUNE_FILE).read_text(encoding="utf-8"))
    assert set(tune) == TUNE_KEYS and set(tune["settings"]) == SETTINGS_KEYS
    assert [set(s) for s in tune["series"]] == [SERIES_KEYS, SERIES_KEYS]
    path = tune["series"][0]["path"]
    assert all(set(step) == STEP_KEYS for step in path)
    assert [step["batch"] for step in path] == [1, 2, 4, 8, 16, 6]
    assert path[0]["versus"] is None and set(path[4]["versus"]) == VERSUS_KEYS
    assert path[4]["versus"] == {
        "batch": 8,
        "gain_pct": 0.2,
        "p_value": 0.6502,
        "significant": False,
    }
    assert [set(r) for r in tune["recommended"]] == [RECOMMENDATION_KEYS] * 2
    assert [(r["batch"], r["point"]) for r in tune["recommended"]] == [
        (8, "b8_s64_amp1"),
        (2, "b2_s96_amp1"),
    ]


def test_a_series_without_an_answer_says_why(tmp_path: Path) -> None:
    record = record_of("infer", KNEE, Curve(96, saturating(4, 90.0), fits_up_to=0))
    write_tune_sweep(tmp_path, record)  # no sweep.json: a search still running reads too
    result = invoke(["profile", "summary", str(tmp_path)])
    assert (result.status, result.stderr) == (0, "")
    assert result.stdout.splitlines()[:2] == [
        "tune knee over batch 1..64 (step 2), 1 point measured; a gain counts when significant "
        "and ≥ 5 %",
        "imgsz 96, amp on: no recommendation: batch 1 does not fit (out of memory, peak 100 MB) "
        "(stopped: none_fits)",
    ]
    assert result.stdout.splitlines()[-2:] == [
        "highest img/s: none (no point finished without failure, thrash or contention)",
        "1 of 1 point failed",
    ]


def test_the_latency_goal_names_its_bound(tune_sweep: Path, tmp_path: Path) -> None:
    root = tmp_path / "sweep"
    shutil.copytree(tune_sweep, root)
    shutil.copyfile(HAND_WRITTEN, root / TUNE_FILE)
    result = invoke(["profile", "summary", str(root)])
    assert (result.status, result.stderr) == (0, "")
    assert result.stdout.splitlines()[:2] == [
        "tune latency over batch 1..16 (step 1), 4 points measured; p99 ≤ 30 ms",
        "imgsz 320, amp off, 4 threads: recommended batch 3: 141.0 ± 0.9 img/s at p99 28.5 ms; "
        "4: p99 41.0 ms, over the 30 ms bound (stopped: latency_bound)",
    ]


READERS = (["summary", "F"], ["report", "F", "-o", "O"], ["compare", "F", "F"])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"schema": "other.tool/v1"}', "unknown schema 'other.tool/v1'"),
        (
            HAND_WRITTEN.read_text(encoding="utf-8").replace('"batch": 3,', '"batch": 0,', 1),
            f"invalid tune record: series[0].batch is 0 (out of range 1..1048576) ({TUNE_HINT})",
        ),
    ],
    ids=["not ours", "a value no search writes"],
)
def test_a_tune_json_every_reader_refuses_is_one_line_and_exit_1(
    tune_sweep: Path, tmp_path: Path, text: str, problem: str
) -> None:
    root = tmp_path / "sweep"
    shutil.copytree(tune_sweep, root)
    (root / TUNE_FILE).write_text(text, encoding="utf-8")
    page = tmp_path / "page.html"
    path = root.resolve() / TUNE_FILE
    for reader in READERS:
        argv = [{"F": str(root), "O": str(page)}.get(a, a) for a in reader]
        result = invoke(["profile", *argv])
        if problem.startswith("unknown"):
            expected = f"failed to read tune record {path}: {problem} (this libreyolo reads "
            expected += "libreyolo.tune/v1)\n"
        else:
            expected = f"failed to read tune record {path}: {problem}\n"
        assert (result.status, result.stdout, result.stderr) == (1, "", expected), reader
    assert not page.exists()


def test_summary_of_a_search_runs_without_heavy_modules(tune_sweep: Path) -> None:
    for extra in ([], ["--json"]):
        proc = _run_blocked(["profile", "summary", str(tune_sweep), *extra])
        assert proc.returncode == 0, proc.stderr
        assert "recommended batch 8" in proc.stdout or '"tune"' in proc.stdout
