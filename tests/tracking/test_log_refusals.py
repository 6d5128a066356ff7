"""`profile log` refuses bad input with one line and the right status, and runs without the
heavy modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import invoke
from tests.test_architecture import BLOCKED, ROOT


def _profile(reference_v1: Path) -> str:
    return str(reference_v1 / "infer_b1.profile.json")


def test_missing_file_exits_2(tmp_path: Path) -> None:
    result = invoke(
        ["profile", "log", str(tmp_path / "nope.json"), "--tensorboard", "tb", "--json"]
    )
    assert result.status == 2 and result.stdout == ""
    assert f"not found: {tmp_path / 'nope.json'}" in result.stderr


def test_stdin_is_refused() -> None:
    result = invoke(["profile", "log", "-", "--tensorboard", "tb"])
    assert result.status == 2
    assert result.stderr.startswith("log reads a file, not stdin")


def test_help_documents_every_flag() -> None:
    result = invoke(["profile", "log", "--help"])
    assert result.status == 0
    for flag in ("--mlflow", "--experiment", "--tensorboard", "--json"):
        assert flag in result.stdout, flag


def test_no_destination_exits_2(reference_v1: Path) -> None:
    result = invoke(["profile", "log", _profile(reference_v1)])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.startswith("log needs --mlflow URI or --tensorboard DIR (or both)")


def test_experiment_without_mlflow_exits_2(reference_v1: Path, tmp_path: Path) -> None:
    argv = [
        "profile",
        "log",
        _profile(reference_v1),
        "--tensorboard",
        str(tmp_path),
        "--experiment",
        "x",
    ]
    result = invoke(argv)
    assert result.status == 2
    assert result.stderr.startswith(
        "--experiment names an MLflow experiment: it needs --mlflow URI"
    )
    assert not any(tmp_path.iterdir())


def test_unknown_uri_scheme_exits_2(reference_v1: Path) -> None:
    result = invoke(["profile", "log", _profile(reference_v1), "--mlflow", "bogus://nowhere"])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.startswith("cannot use MLflow at bogus://nowhere: ")
    assert len(result.stderr.splitlines()) == 1


def test_a_trace_is_refused(gpu_traces: Path, tmp_path: Path) -> None:
    trace = str(gpu_traces / "tracelens_h100_vit_infer_1step.json.gz")
    result = invoke(["profile", "log", trace, "--tensorboard", str(tmp_path)])
    assert result.status == 2
    assert result.stderr.startswith(f"{trace} is a trace, not a profile.json")


def test_a_folder_that_is_no_sweep_is_refused(tmp_path: Path) -> None:
    result = invoke(["profile", "log", str(tmp_path), "--tensorboard", str(tmp_path / "tb")])
    assert result.status == 2
    assert result.stderr.startswith(f"{tmp_path} is neither a profile nor a sweep folder")


def test_tensorboard_folder_blocked_by_a_file_exits_2(reference_v1: Path, tmp_path: Path) -> None:
    (tmp_path / "tb").write_text("")
    result = invoke(
        ["profile", "log", _profile(reference_v1), "--tensorboard", str(tmp_path / "tb")]
    )
    assert result.status == 2
    assert result.stderr.startswith(f"cannot write TensorBoard events under {tmp_path / 'tb'}")


@pytest.mark.parametrize(
    ("module", "flag", "extra"),
    [
        ("mlflow", "--mlflow", "mlflow"),
        ("tensorboard.compat.proto.event_pb2", "--tensorboard", "tensorboard"),
    ],
)
def test_missing_extra_exits_3_before_logging_anything(
    module: str,
    flag: str,
    extra: str,
    reference_v1: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if the extra were not installed
    uri, board = f"file:{tmp_path / 'mlruns'}", tmp_path / "tb"
    argv = ["profile", "log", _profile(reference_v1), "--mlflow", uri, "--tensorboard", str(board)]
    result = invoke(argv)
    assert result.status == 3 and result.stdout == ""
    assert result.stderr == f"{flag} needs the {extra} extra: pip install 'libreyolo[{extra}]'\n"
    assert not (tmp_path / "mlruns").exists() and not board.exists()


def test_log_runs_without_heavy_modules(reference_v1: Path, tmp_path: Path) -> None:
    argv = [
        "profile",
        "log",
        _profile(reference_v1),
        "--mlflow",
        f"file:{tmp_path / 'mlruns'}",
        "--tensorboard",
        str(tmp_path / "tb"),
    ]
    code = (
        "import sys\n"
        f"for name in {BLOCKED!r}: sys.modules[name] = None\n"
        "from libreyolo.cli.main import main\n"
        f"raise SystemExit(main({argv!r}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "tb" / "infer_b1").is_dir()
