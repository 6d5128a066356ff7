"""Bad input: one line on stderr, nothing on stdout, the right exit status. One test per case."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.conftest import invoke

V1 = "infer_b1.profile.json"
TRAIN_V1 = "train_cpu.profile.json"


@pytest.fixture
def v1_dir(reference_v1: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(reference_v1)
    return reference_v1


@pytest.fixture
def bad(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference_v1: Path) -> Path:
    """A folder of broken inputs, and the working directory of the test."""
    text = (reference_v1 / V1).read_text()
    files = {
        "empty.json": "",
        "garbage.json": "this is not json at all",
        "truncated_profile.json": text[:5000],
        "emptyobj.json": "{}",
        "emptylist.json": "[]",
        "config.json": json.dumps({"lr": 0.01, "epochs": 3}),
        "schema_only.json": json.dumps({"schema": "libreyolo.profile.analysis/v1"}),
        "future.json": json.dumps({"schema": "libreyolo.profile/v3", "kind": "train"}),
        "unknown_schema.json": json.dumps({"schema": "someone.else/v1"}),
        "mistyped.json": json.dumps(
            {
                "schema": "libreyolo.profile/v2",
                "kind": "train",
                "created": None,
                "tool": {"version": "2"},
                "run": {"mode": 3},
            }
        ),
        "missing_key.json": json.dumps(
            {
                "schema": "libreyolo.profile/v2",
                "kind": "train",
                "created": None,
                "tool": {"version": "2"},
            }
        ),
        "no_events.json": json.dumps({"traceEvents": []}),
    }
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    trace = json.dumps(
        {
            "traceEvents": [
                {
                    "ph": "X",
                    "cat": "cpu_op",
                    "name": "aten::add",
                    "pid": 1,
                    "tid": 1,
                    "ts": 1.0,
                    "dur": 2.0,
                }
            ]
            * 50
        }
    )
    packed = gzip.compress(trace.encode())
    (tmp_path / "truncated_trace.json.gz").write_bytes(packed[: len(packed) // 2])
    (tmp_path / "folder").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def assert_error(argv: list[str], status: int, message: str) -> None:
    result = invoke(argv)
    assert result.status == status, result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(message), result.stderr


USAGE_CASES = [
    (["profile", "summary", "nope.json"], "not found: nope.json"),
    (["profile", "get", "nope.json", "img_per_s"], "not found: nope.json"),
    (["profile", "phases", "missing/profile.json"], "not found: missing/profile.json"),
    (["profile", "compare", V1, "nope.json"], "not found: nope.json"),
    (["profile", "summary"], "libreyolo profile summary: the following arguments are required"),
    (["profile", "summary", V1, "--bogus"], "libreyolo: unrecognized arguments: --bogus"),
    (["profile", "bogus"], "libreyolo profile: argument <subcommand>: invalid choice: 'bogus'"),
    (["profile", "get", V1, "steps=10"], "'steps=10': key=value arguments are not accepted"),
    (
        ["profile", "kernels", V1, "top=5"],
        "'top=5': key=value arguments are not accepted; use --top 5",
    ),
    (
        ["profile", "get", V1, "no_such_metric"],
        f"unknown metric 'no_such_metric'. run 'profile get {V1}' to list metrics.",
    ),
    (
        ["profile", "kernels", V1, "--phase", "backward"],
        "unknown phase 'backward'. available: preprocess, forward, postprocess",
    ),
    (
        ["profile", "ops", TRAIN_V1, "--phase", "bogus"],
        "unknown phase 'bogus'. available: dataload, to_device, forward, backward, optimizer",
    ),
    (["profile", "kernels", V1, "--category", "bogus"], "unknown category 'bogus'. known:"),
    (
        ["profile", "kernels", V1, "--sort", "size"],
        "libreyolo profile kernels: argument --sort: invalid choice: 'size'",
    ),
    (
        ["profile", "kernels", V1, "--grep", "("],
        "libreyolo profile kernels: argument --grep: invalid regex '('",
    ),
    (
        ["profile", "kernels", V1, "--top", "-1"],
        "libreyolo profile kernels: argument --top: must be 0 or more, got -1",
    ),
    (
        ["profile", "ops", V1, "--top", "abc"],
        "libreyolo profile ops: argument --top: must be an integer, got abc",
    ),
    (["profile", "what-if", V1], "specify --remove-category, --remove-launches or --variant"),
    (
        ["profile", "what-if", V1, "--remove-launches", "-5"],
        "libreyolo profile what-if: argument --remove-launches: must be 0 or more, got -5",
    ),
    (
        ["profile", "what-if", V1, "--remove-launches", "10"],
        "--remove-launches does not apply to a CPU profile",
    ),
    (
        ["profile", "run", "data.yaml", "--steps", "0"],
        "libreyolo profile run: argument --steps: must be a positive integer, got 0",
    ),
    (
        ["profile", "run", "data.yaml", "--batch", "0"],
        "libreyolo profile run: argument --batch: must be a positive batch size or -1 (auto), "
        "got 0",
    ),
    (
        ["profile", "infer", "--amp-dtype", "int8"],
        "libreyolo profile infer: argument --amp-dtype: invalid choice: 'int8'",
    ),
    (
        ["profile", "infer", "--conf", "2"],
        "libreyolo profile infer: argument --conf: must be a number in [0, 1], got 2",
    ),
    (
        ["profile", "infer", "--runs", "0"],
        "libreyolo profile infer: argument --runs: must be a positive integer, got 0",
    ),
    (
        ["profile", "infer", "--exec", "tensorrt"],
        "libreyolo profile infer: argument --exec: invalid choice: 'tensorrt'",
    ),
    (
        ["profile", "run", "data.yaml", "--exec", "onnxruntime"],
        "libreyolo profile run: argument --exec: invalid choice: 'onnxruntime'",
    ),
    (
        ["profile", "infer", "--compile-mode", "fastest"],
        "libreyolo profile infer: argument --compile-mode: invalid choice: 'fastest'",
    ),
    (
        ["profile", "infer", "--exec", "cudagraphs", "--device", "cpu"],
        "--exec cudagraphs needs a CUDA device; cpu has no CUDA graphs",
    ),
    (
        ["profile", "infer", "--exec", "compile", "--warmup", "1", "--device", "cpu"],
        "--exec compile needs --warmup 3 or more (got 1)",
    ),
]


@pytest.mark.parametrize(
    ("argv", "message"), USAGE_CASES, ids=[" ".join(c[0]) for c in USAGE_CASES]
)
def test_cli_usage_error_exits_2_with_one_line(argv: list[str], message: str, v1_dir: Path) -> None:
    assert_error(argv, 2, message)


def test_cli_directory_exits_2(bad: Path) -> None:
    assert_error(["profile", "summary", "folder"], 2, "not a file: folder is a directory")


ANALYSIS_CASES = [
    ("empty.json", "failed to analyse empty.json: the file is empty"),
    ("garbage.json", "failed to analyse garbage.json: not valid JSON"),
    ("truncated_profile.json", "failed to analyse truncated_profile.json: not valid JSON"),
    ("truncated_trace.json.gz", "failed to analyse truncated_trace.json.gz:"),
    ("emptyobj.json", "failed to analyse emptyobj.json: not a libreyolo profile (no schema tag)"),
    ("emptylist.json", "failed to analyse emptylist.json:"),
    ("config.json", "failed to analyse config.json: not a libreyolo profile (no schema tag)"),
    (
        "schema_only.json",
        "failed to analyse schema_only.json: invalid libreyolo 1.6.0 profile (no 'metrics' map)",
    ),
    ("future.json", "failed to analyse future.json: profile schema v3 is newer than v2"),
    (
        "unknown_schema.json",
        "failed to analyse unknown_schema.json: unknown profile schema 'someone.else/v1'",
    ),
    ("mistyped.json", "failed to analyse mistyped.json: invalid profile: Expected `str`"),
    ("missing_key.json", "failed to analyse missing_key.json: invalid profile: Object missing"),
    ("no_events.json", "failed to analyse no_events.json:"),
]


@pytest.mark.parametrize(("name", "message"), ANALYSIS_CASES, ids=[c[0] for c in ANALYSIS_CASES])
@pytest.mark.parametrize("reader", ["summary", "get", "phases"])
def test_cli_unanalysable_file_exits_1(name: str, message: str, reader: str, bad: Path) -> None:
    assert_error(["profile", reader, name], 1, message)


def test_cli_compare_with_a_bad_side_exits_1(bad: Path, reference_v1: Path) -> None:
    assert_error(
        ["profile", "compare", str(reference_v1 / V1), "garbage.json"],
        1,
        "failed to analyse garbage.json: not valid JSON",
    )


def test_cli_json_mode_error_is_one_json_object(v1_dir: Path) -> None:
    result = invoke(["profile", "get", V1, "no_such_metric", "--json"])
    assert result.status == 2 and result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "unknown_name"
    assert (
        error["message"]
        == f"unknown metric 'no_such_metric'. run 'profile get {V1}' to list metrics."
    )


def test_cli_json_mode_missing_file_is_one_json_object(v1_dir: Path) -> None:
    result = invoke(["profile", "summary", "nope.json", "--json"])
    assert result.status == 2 and result.stdout == ""
    assert json.loads(result.stderr) == {
        "error": {"code": "not_found", "message": "not found: nope.json", "hint": None}
    }


def test_cli_debug_shows_the_traceback(v1_dir: Path) -> None:
    from libreyolo.errors import UnknownNameError

    with pytest.raises(UnknownNameError):
        invoke(["profile", "get", V1, "no_such_metric", "--debug"])
