"""Every reader on mutated profiles, traces and sweep files: a clean exit, never a crash.

Mutations of real documents (libreyolo 1.6.0's reference files, a v2 profile made from a real
GPU trace, a small Chrome trace, a hand-built sweep folder): keys dropped, values replaced by
other types, NaN, huge or negative numbers and strings full of control characters, and bytes
cut off. Whatever the input, a reader exits 0, 1 or 2 with at most one line on stderr and no
traceback, prints no control character but line ends, prints nothing on failure, and under
`--json` prints one JSON document. A sweep folder's files also get the values that once
crashed the sweep page (a batch of 10**30, an img/s of 1e308, a superscript digit for an imgsz,
a list for an object), and the record its point folders read into always passes the checks
`sweep.json` gets when read back. A batch search's `tune.json` (the hand-written one of
tests/data) is mutated the same way.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import re
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from libreyolo.analysis.sweep import sweep_record
from libreyolo.boundary.output import Output
from libreyolo.cli.main import main
from libreyolo.document.convert import to_plain
from libreyolo.document.sweep_files import collect_points, collect_sweep, point_folders
from libreyolo.document.sweep_validate import HINT, record_problem
from tests.document.test_tune_io import hand_written
from tests.fixture_files import fixture_dir
from tests.kineto.conftest import event, kernel, launch
from tests.render.hostile import HOSTILE, SMALL_TRACE, make_hostile, stray_controls, v2_raw

FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
V1_FILES = ("infer_b1.profile.json", "train_cpu.profile.json", "infer_repeat.json")
DEEP = "<deeply nested>"  # written as 3000 nested arrays: deeper than json.loads can go
REPLACEMENTS: tuple[Any, ...] = (
    None,
    True,
    0,
    -1,
    -1.5e300,
    1e308,
    float("nan"),
    float("inf"),
    float("-inf"),
    2**70,
    "",
    "x",
    HOSTILE,
    "k" * 3000,
    [],
    {},
    [1, "a", None],
    {"a": {"b": -1}},
    DEEP,
)
# Each reader with its arguments; F is the file (or folder) under test, O a page beside it.
PROFILE_READERS = (
    ["summary", "F"],
    ["get", "F"],
    ["get", "F", "step_ms"],
    ["get", "F", "bound"],
    ["phases", "F"],
    ["kernels", "F"],
    ["ops", "F"],
    ["compare", "F", "F"],
    ["what-if", "F", "--remove-category", "e"],
    ["report", "F", "-o", "O"],
    ["report", "F", "F", "-o", "O"],
)
# What a sweep's files get besides: the values that crashed `report` (the page's charts) and
# `summary` (the recommended order: "²".isdigit() is true, int("²") fails).
SWEEP_REPLACEMENTS: tuple[Any, ...] = (
    *REPLACEMENTS,
    10**30,
    10**400,
    1e-11,
    5e-324,
    "²",
    "640",
    [{"a": 1}],
    {"status": "ok"},
)
SWEEP_READERS = (["summary", "F"], ["report", "F", "-o", "O"], ["compare", "F", "F"])
TRACEBACK = re.compile(r"Traceback|internal error", re.IGNORECASE)


# --- the documents that get mutated -------------------------------------------------------


@cache
def _profile_bases() -> tuple[str, ...]:
    """JSON texts of real profiles (cached as text: each example mutates a fresh copy)."""
    reference = fixture_dir("reference_v1")
    bases = [(reference / name).read_text(encoding="utf-8") for name in V1_FILES]
    trace = fixture_dir("gpu_traces") / SMALL_TRACE
    # a v2 profile, plain and with control characters in its names
    bases += [json.dumps(v2_raw(trace)), json.dumps(make_hostile(v2_raw(trace)))]
    return tuple(bases)


def _small_trace() -> dict[str, Any]:
    """Two profiler steps, each with a forward range, an op, a launch and its kernel."""
    events: list[dict[str, Any]] = []
    for step in range(2):
        t = 1000.0 * step
        events += [
            event("user_annotation", f"ProfilerStep#{step}", t, 900.0),
            event("user_annotation", "step/forward", t + 10, 500.0),
            event("cpu_op", "aten::conv2d", t + 20, 100.0),
            launch(t + 30, corr=step + 1),
            kernel("void implicit_convolve_sgemm<float>()", t + 40, 300.0, corr=step + 1),
        ]
    return {"traceEvents": events}


def _make_sweep(root: Path) -> None:
    """Two point folders (one ok with its profile, one failed); `sweep.json` is optional."""
    for name, ok in (("b1_s64", True), ("b2_s64", False)):
        folder = root / name
        (folder / "infer").mkdir(parents=True)
        request = {"config": {"batch": 1, "imgsz": 64, "amp": False}, "overrides": ["batch=1"]}
        (folder / "point.json").write_text(json.dumps(request), encoding="utf-8")
        status = {"status": "ok", "reason": "", "code": "", "profile": "infer/profile.json"}
        if not ok:
            status = {"status": "failed", "reason": "boom", "code": "oom", "profile": None}
        (folder / "status.json").write_text(json.dumps(status), encoding="utf-8")
        metrics = {"img_per_s": 50.0, "step_ms": 20.0, "memory_pressure": False, "bound": "x"}
        profile = {"metrics": metrics, "verdict": {"bound": "compute"}, "run": {"amp": False}}
        (folder / "infer" / "profile.json").write_text(json.dumps(profile), encoding="utf-8")


# --- mutations ----------------------------------------------------------------------------


_DESCEND = st.integers(0, 3).map(bool)


@st.composite
def _mutated(draw: st.DrawFn, doc: Any, replacements: tuple[Any, ...] = REPLACEMENTS) -> Any:
    """`doc` (a fresh copy) with one to three mutations at places picked by walking down."""
    for _ in range(draw(st.integers(1, 3))):
        parent, key = None, None
        node = doc
        # Walk down, stopping at each level with probability 1/4: deep and shallow places.
        while isinstance(node, dict | list) and node and (parent is None or draw(_DESCEND)):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            parent, key = node, draw(st.sampled_from(keys))
            node = node[key]
        if parent is None:
            return draw(st.sampled_from(replacements))
        action = draw(st.sampled_from(["drop", "replace", "replace", "controls"]))
        if action == "drop":
            del parent[key]
        elif action == "replace":
            parent[key] = copy.deepcopy(draw(st.sampled_from(replacements)))
        else:
            text = node if isinstance(node, str) else json.dumps(node)
            at = draw(st.integers(0, len(text)))
            parent[key] = text[:at] + HOSTILE + text[at:]
    return doc


def _encode(draw: st.DrawFn, doc: Any, *, gz: bool) -> bytes:
    text = json.dumps(doc)  # NaN and Infinity as the literals json.loads accepts
    data = text.replace(json.dumps(DEEP), "[" * 3000 + "]" * 3000).encode()
    if draw(st.integers(0, 5)) == 3 and len(data) > 2:  # one in six: cut off mid-file
        data = data[: draw(st.integers(1, len(data) - 1))]
    return gzip.compress(data, mtime=0) if gz else data


@st.composite
def mutated_profiles(draw: st.DrawFn) -> tuple[str, bytes]:
    base = json.loads(draw(st.sampled_from(_profile_bases())))
    gz = draw(st.booleans())
    return ("p.json.gz" if gz else "p.json"), _encode(draw, draw(_mutated(base)), gz=gz)


@st.composite
def mutated_traces(draw: st.DrawFn) -> tuple[str, bytes]:
    return "trace.json", _encode(draw, draw(_mutated(_small_trace())), gz=False)


@st.composite
def _scattered(draw: st.DrawFn, doc: Any) -> Any:
    """`doc` with each value replaced one time in four, at every depth (a walk down changes
    one place; the page crashed on values in several rows and fields at once)."""
    if isinstance(doc, dict):
        for key in list(doc):
            if draw(st.integers(0, 3)) == 0:
                doc[key] = copy.deepcopy(draw(st.sampled_from(SWEEP_REPLACEMENTS)))
            else:
                doc[key] = draw(_scattered(doc[key]))
    return doc


@st.composite
def _scattered_record(draw: st.DrawFn, record: dict[str, Any]) -> dict[str, Any]:
    """A sweep record with values scattered through its rows and its own fields, its schema
    and the rows themselves kept: every reader gets past the shape to the values."""
    rows = record["points"]
    for name in rows:
        rows[name] = draw(_scattered(rows[name]))
    rest = {key: value for key, value in record.items() if key not in ("schema", "points")}
    return record | draw(_scattered(rest))


def _sweep_documents() -> dict[str, Any]:
    """Relative path -> JSON document of each file of `_make_sweep`'s folder, and the
    `sweep.json` the sweep writes from them."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _make_sweep(root)
        docs: dict[str, Any] = {}
        for name in ("b1_s64", "b2_s64"):
            for leaf in ("point.json", "status.json", "infer/profile.json"):
                docs[f"{name}/{leaf}"] = json.loads((root / name / leaf).read_text("utf-8"))
        docs["sweep.json"] = to_plain(
            sweep_record(str(root), collect_points(root, point_folders(root)))
        )
    return docs


@st.composite
def _changed(draw: st.DrawFn, docs: dict[str, Any], target: str) -> dict[str, bytes]:
    """Every file's bytes, `target`'s walked into at one place or with values scattered
    through it, half and half."""
    changed = {name: json.dumps(doc).encode() for name, doc in docs.items()}
    doc = docs[target]
    if draw(st.booleans()):
        doc = draw(_mutated(doc, SWEEP_REPLACEMENTS))
    elif target == "sweep.json":
        doc = draw(_scattered_record(doc))
    else:
        doc = draw(_scattered(doc))
    changed[target] = _encode(draw, doc, gz=False)
    return changed


@st.composite
def mutated_sweep_records(draw: st.DrawFn) -> dict[str, bytes]:
    """Relative path -> bytes of a sweep folder whose `sweep.json` (all the readers read of
    it but the ok points' profiles) is mutated."""
    return draw(_changed(_sweep_documents(), "sweep.json"))


@st.composite
def mutated_tune_records(draw: st.DrawFn) -> dict[str, bytes]:
    """Relative path -> bytes of a sweep folder with a mutated `tune.json` beside its record."""
    docs = _sweep_documents() | {"tune.json": hand_written()}
    return draw(_changed(docs, "tune.json"))


@st.composite
def mutated_point_folders(draw: st.DrawFn) -> dict[str, bytes]:
    """Relative path -> bytes of a sweep folder without `sweep.json` (a sweep still running):
    one file of a point folder mutated, the rest valid."""
    docs = _sweep_documents()
    del docs["sweep.json"]
    return draw(_changed(docs, draw(st.sampled_from(sorted(docs)))))


# --- the check ----------------------------------------------------------------------------


def _check_reader(argv: list[str]) -> None:
    out, err = io.StringIO(), io.StringIO()
    json_mode = "--json" in argv
    try:
        status = main(argv, output=Output(out, err, json_mode=json_mode))
    except Exception as crash:  # emit runs outside main's handler: a crash there escapes
        raise AssertionError(f"{argv} raised {type(crash).__name__}: {crash}") from crash
    stdout, stderr = out.getvalue(), err.getvalue()
    context = f"{argv}: exit {status}, stderr {stderr!r}"
    assert status in (0, 1, 2), context
    assert stderr.count("\n") <= 1 and not TRACEBACK.search(stderr), context
    assert stray_controls(stdout) == [] and stray_controls(stderr) == [], context
    if status != 0:
        assert stdout == "", context
    elif json_mode:
        json.loads(stdout)
    if json_mode and stderr:
        assert isinstance(json.loads(stderr).get("error"), dict), context


def _read_file_case(case: tuple[str, bytes]) -> None:
    """Every profile reader on one mutated file, written under its own name."""
    name, data = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        _run_readers(path, PROFILE_READERS)


def _run_readers(target: Path, readers: tuple[list[str], ...]) -> None:
    for reader in readers:
        page = str(target.parent / "fuzz-report.html")
        names = {"F": str(target), "O": page}
        argv = ["profile", *(names.get(a, a) for a in reader)]
        _check_reader(argv)
        _check_reader([*argv, "--json"])


@settings(FUZZ, max_examples=80)
@given(mutated_profiles())
def test_fuzz_readers_on_mutated_profiles(case: tuple[str, bytes]) -> None:
    _read_file_case(case)


@FUZZ
@given(mutated_traces())
def test_fuzz_readers_on_mutated_traces(case: tuple[str, bytes]) -> None:
    _read_file_case(case)


def _read_sweep_case(files: dict[str, bytes]) -> None:
    """Every sweep reader on a sweep folder holding `files`."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sweep"
        _make_sweep(root)
        for name, data in files.items():
            (root / name).write_bytes(data)
        _run_readers(root, SWEEP_READERS)
        # what the sweep would write from these folders, it reads back
        written = to_plain(sweep_record(str(root), collect_sweep(root)))
        assert isinstance(written, dict) and record_problem(written) is None


@FUZZ
@given(mutated_sweep_records())
def test_fuzz_readers_on_mutated_sweep_records(files: dict[str, bytes]) -> None:
    _read_sweep_case(files)


@settings(FUZZ, max_examples=30)
@given(mutated_tune_records())
def test_fuzz_readers_on_mutated_tune_records(files: dict[str, bytes]) -> None:
    _read_sweep_case(files)


@FUZZ
@given(mutated_point_folders())
def test_fuzz_readers_on_mutated_point_folders(files: dict[str, bytes]) -> None:
    _read_sweep_case(files)


# --- what the fuzz found, kept as plain tests ---------------------------------------------


def _status_and_stderr(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["profile", *argv], output=Output(out, err))
    return int(status), err.getvalue()


def test_v1_file_of_the_wrong_shape_exits_1_in_one_line(tmp_path: Path) -> None:
    raw = json.loads((fixture_dir("reference_v1") / "infer_repeat.json").read_text("utf-8"))
    raw["img_per_s_trials"] = True  # the migration iterated over it
    path = tmp_path / "p.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    assert _status_and_stderr(["summary", str(path)]) == (
        1,
        f"failed to analyse {path}: invalid schema v1 profile (expected a list of trials, got "
        "bool)\n",
    )


def test_summary_of_a_profile_with_an_odd_legacy_latency_exits_0(tmp_path: Path) -> None:
    raw = json.loads((fixture_dir("reference_v1") / "infer_b1.profile.json").read_text())
    raw["latency"] = 5  # 1.6.0's latency object, now a number: summary called .get on it
    path = tmp_path / "p.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    assert _status_and_stderr(["summary", str(path)]) == (0, "")


def test_summary_of_a_sweep_with_odd_rows_exits_1_naming_the_row(tmp_path: Path) -> None:
    record = {"points": {"a": 3, "b": {"status": "ok", "metrics": 5}}, "recommended": "x"}
    (tmp_path / "sweep.json").write_text(json.dumps(record), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert main(["profile", "summary", str(tmp_path)], output=Output(out, err)) == 1
    assert out.getvalue() == ""
    assert err.getvalue() == (
        f"failed to read sweep {tmp_path.resolve() / 'sweep.json'}: invalid sweep record: "
        f"points['a'] is an integer, not an object ({HINT})\n"
    )


@pytest.mark.parametrize("text", ['{"points": {}, "x": NaN}', "[" * 5000 + "]" * 5000])
def test_sweep_json_with_nan_or_deep_nesting_exits_1(text: str, tmp_path: Path) -> None:
    (tmp_path / "sweep.json").write_text(text, encoding="utf-8")
    status, stderr = _status_and_stderr(["summary", str(tmp_path)])
    assert status == 1 and stderr.startswith(f"failed to read sweep {tmp_path / 'sweep.json'}: ")


@pytest.mark.parametrize("text", ['{"status": NaN}', "[" * 5000 + "]" * 5000])
def test_status_json_with_nan_or_deep_nesting_reads_as_no_status(text: str, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "point.json").write_text("{}", encoding="utf-8")
    (tmp_path / "a" / "status.json").write_text(text, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert main(["profile", "summary", str(tmp_path)], output=Output(out, err)) == 0
    assert "crashed: no status recorded" in out.getvalue()
