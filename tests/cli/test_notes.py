"""Every note a run records reaches `summary`, the end-of-run lines and the report page, with or
without a trace: one list per profile (`Profile.notes`), the trace analyser's caveats apart.

Each measurement is tiny (CPU, --imgsz 64 or 100, a couple of iterations) and asserts no
timing, so a busy host cannot fail it. The weights are random: the weights cache points at an
empty folder and the download at a closed port.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import msgspec.structs
import pytest
import torch.profiler

import libreyolo.kineto
from libreyolo.analysis.outcome import outcome
from libreyolo.document.model import TraceAnalysis
from libreyolo.errors import AnalysisError
from libreyolo.render.jsondoc import to_json_text
from libreyolo.render.text import to_lines
from libreyolo.workload.data.synthetic import make_synthetic
from tests.conftest import CliResult, invoke
from tests.profiles import training_profile
from tests.report import pagecheck

HALF = "--half has no effect on cpu: the forward ran in float32"
ROUNDED = "--imgsz 100 rounded to 128 (a multiple of the model stride 32)"
RANDOM = "random weights: WEIGHTS NOT AVAILABLE: LibreYOLO9t.pt is not in ./weights or "
EXPORT_FAILED = "no trace: torch could not export it (export refused by the test)"
NOT_ANALYSED = "trace not analysed: the test's trace is truncated"
NOT_CALIBRATED = (
    "profiler overhead not calibrated: the dataset holds 2 batches per epoch, the measured "
    "steps used them all"
)
TINY_INFER = ["profile", "infer", "--device", "cpu", "--warmup", "1", "--runs", "2"]


def _refuse_export(self: object, path: str) -> None:
    raise RuntimeError("export refused by the test")  # what torch raises when it cannot write


def _random_weights(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setenv("LIBREYOLO_WEIGHTS_DIR", str(folder))
    monkeypatch.setenv("LIBREYOLO_WEIGHTS_URL", "http://127.0.0.1:9/{name}")


@pytest.fixture(scope="module")
def three_notes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[CliResult, Path]]:
    """The issue's run: `infer --device cpu --half --no-trace --imgsz 100` on random weights,
    its end-of-run output and its profile."""
    project = tmp_path_factory.mktemp("three-notes")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _random_weights(monkeypatch, project / "weights")
        argv = [*TINY_INFER, "--half", "--no-trace", "--imgsz", "100"]
        result = invoke([*argv, "--project", str(project)])
    assert result.status == 0, result.stderr
    yield result, project / "infer" / "profile.json"


def _notes(path: Path) -> list[str]:
    """The `note: ...` lines `summary` prints for the profile at `path`."""
    summary = invoke(["profile", "summary", str(path)])
    assert summary.status == 0, summary.stderr
    return [line for line in summary.stdout.splitlines() if line.startswith("note: ")]


def _has(lines: list[str], note: str) -> bool:
    return any(line.startswith(f"note: {note}") for line in lines)


# --- each source of a note, in a profile without a trace --------------------------------------


@pytest.mark.parametrize("note", [RANDOM, HALF, ROUNDED], ids=["weights", "device", "imgsz"])
def test_a_note_of_an_untraced_run_reaches_summary(
    note: str, three_notes: tuple[CliResult, Path]
) -> None:
    _, path = three_notes
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["trace"] is None and "notes" not in document["run"]["config"]
    assert any(n.startswith(note) for n in document["notes"])
    assert _has(_notes(path), note)


def test_a_trace_torch_cannot_export_is_a_note_in_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _random_weights(monkeypatch, tmp_path / "weights")
    monkeypatch.setattr(torch.profiler.profile, "export_chrome_trace", _refuse_export)
    result = invoke([*TINY_INFER, "--imgsz", "64", "--project", str(tmp_path), "--json"])
    assert result.status == 0, result.stderr
    out = result.json()
    assert isinstance(out, dict)
    assert EXPORT_FAILED in out["notes"] and out["trace_notes"] == []
    path = tmp_path / "infer" / "profile.json"
    assert json.loads(path.read_text(encoding="utf-8"))["trace"] is None
    assert not (tmp_path / "infer" / "profile_trace.json").exists()
    assert _has(_notes(path), EXPORT_FAILED)


def test_a_trace_that_cannot_be_analysed_is_a_note_in_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def truncated(path: object, **kwargs: object) -> None:
        raise AnalysisError("the test's trace is truncated")

    _random_weights(monkeypatch, tmp_path / "weights")
    monkeypatch.setattr(libreyolo.kineto, "analyse_trace", truncated)
    result = invoke([*TINY_INFER, "--imgsz", "64", "--project", str(tmp_path)])
    assert result.status == 0, result.stderr
    kept = f"{NOT_ANALYSED}; the recorded trace is kept as profile_trace.json"
    assert f"note: {kept}" in result.stdout.splitlines()
    path = tmp_path / "infer" / "profile.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["trace"] is None and document["artifacts"]["trace"] == "profile_trace.json"
    assert (tmp_path / "infer" / "profile_trace.json").stat().st_size > 0
    assert _has(_notes(path), kept)


def test_a_full_temp_folder_keeps_the_recorded_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The analyser spools ops to TMPDIR; when that fails (a full disk) the run keeps its
    profile and the trace it recorded, and says how to analyse it later."""
    import types

    from libreyolo.kineto import spool

    def full(*args: object, **kwargs: object) -> object:
        raise OSError(28, "No space left on device")

    _random_weights(monkeypatch, tmp_path / "weights")
    monkeypatch.setattr(spool, "tempfile", types.SimpleNamespace(TemporaryFile=full))
    result = invoke([*TINY_INFER, "--imgsz", "64", "--project", str(tmp_path), "--json"])
    assert result.status == 0, result.stderr
    trace = tmp_path / "infer" / "profile_trace.json"
    notes = json.loads((tmp_path / "infer" / "profile.json").read_text(encoding="utf-8"))["notes"]
    (note,) = [n for n in notes if n.startswith("trace not analysed")]
    assert "cannot spool its ops to a temporary file (No space left on device)" in note
    assert note.endswith(
        "(point TMPDIR at a directory with free space); the recorded trace is "
        "kept as profile_trace.json"
    )
    monkeypatch.undo()
    later = invoke(["profile", "summary", str(trace), "--json"])
    assert later.status == 0, later.stderr


def test_a_trimmed_calibration_is_a_note_in_summary_without_a_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Four images at batch 2: the two measured steps use the whole epoch, leaving no batch for
    # the bare calibration steps. Training always traces: the export fails here, so the note
    # is shown from the profile's own list, not from a trace.
    data = make_synthetic(tmp_path / "data", num_train=4, num_val=2, imgsz=64, seed=1)
    _random_weights(monkeypatch, tmp_path / "weights")
    monkeypatch.setattr(torch.profiler.profile, "export_chrome_trace", _refuse_export)
    argv = ["profile", "run", str(data), "--device", "cpu", "--batch", "2", "--imgsz", "64"]
    argv += ["--steps", "2", "--warmup", "0", "--workers", "0", "--project", str(tmp_path)]
    result = invoke(argv)
    assert result.status == 0, result.stderr
    path = tmp_path / "run" / "profile.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["trace"] is None and document["window"]["num_bare"] == 0
    assert NOT_CALIBRATED in document["notes"]
    assert _has(_notes(path), NOT_CALIBRATED)


# --- the run: all three notes on every surface -------------------------------------


def _three(lines: list[str]) -> list[str]:
    """The lines of the three notes, in order; the random-weights line cut to its prefix."""
    wanted = (f"note: {ROUNDED}", f"note: {RANDOM}", f"note: {HALF}")
    return [w for line in lines for w in wanted if line.startswith(w)]


def test_summary_prints_all_three_notes(three_notes: tuple[CliResult, Path]) -> None:
    _, path = three_notes
    assert _three(_notes(path)) == [f"note: {ROUNDED}", f"note: {RANDOM}", f"note: {HALF}"]
    summary = invoke(["profile", "summary", str(path), "--json"]).json()
    assert isinstance(summary, dict) and summary["trace_notes"] == []
    recorded = [n for n in summary["notes"] if "noisy" not in n]  # the reading's own notes
    assert recorded[0] == ROUNDED and recorded[1].startswith(RANDOM) and recorded[2] == HALF
    assert len(recorded) == 3


def test_the_end_of_run_lines_print_all_three_notes(three_notes: tuple[CliResult, Path]) -> None:
    result, path = three_notes
    lines = result.stdout.splitlines()
    at = lines.index(f"profile: {path}")
    assert _three(lines[at - 3 : at]) == [f"note: {ROUNDED}", f"note: {RANDOM}", f"note: {HALF}"]
    assert lines[at + 1] == f"next:    libreyolo profile summary {path}"


def test_the_report_page_lists_all_three_notes(
    three_notes: tuple[CliResult, Path], tmp_path: Path
) -> None:
    _, path = three_notes
    out = tmp_path / "report.html"
    result = invoke(["profile", "report", str(path), "-o", str(out)])
    assert result.status == 0, result.stderr
    text = pagecheck.plain_text(pagecheck.parse(out.read_text(encoding="utf-8")))
    notes = text[text.index("Notes and warnings") :]
    for note in (ROUNDED, RANDOM, HALF):
        assert " ".join(note.split()) in notes


# --- the trace analyser's caveats stay apart ------------------------------------------------


def test_the_end_of_run_lines_label_the_traces_caveats_apart() -> None:
    caveat = "no ProfilerStep: the whole trace is one window"
    trace = TraceAnalysis(source="whole_trace", num_steps=0, window_ms=1.0, has_gpu=False)
    profile = training_profile("cpu", trace=msgspec.structs.replace(trace, notes=[caveat]))
    profile = msgspec.structs.replace(profile, notes=[HALF])
    result = outcome(profile, "p/run/profile.json", "p/run/profile_trace.json")
    lines = to_lines(result)
    at = lines.index("profile: p/run/profile.json")
    assert lines[at - 2 : at] == [f"note: {HALF}", f"trace note: {caveat}"]
    out = json.loads(to_json_text(result))
    assert (out["notes"], out["trace_notes"]) == ([HALF], [caveat])
