"""One exit-status map for measuring commands: bad destinations exit 2, failed measurements
exit 3, SIGTERM 143, each in one line; results are emitted inside the error handler."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from libreyolo.boundary.output import Output
from libreyolo.cli.main import main
from tests.conftest import invoke
from tests.fixture_files import YOLO9T, fixture_file

CHECKPOINT = fixture_file(YOLO9T)
TINY = ["--device", "cpu", "--warmup", "0", "--runs", "2", "--imgsz", "64", "--no-trace"]
REFUSE = "it is not a profile folder made by libreyolo (move it away or choose another --project)"


@pytest.fixture
def weights() -> str:
    return str(CHECKPOINT)


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Destinations are checked before any model is built: building one fails the test."""

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was loaded before the destination was checked")

    monkeypatch.setattr("libreyolo.workload.api.load_workload_model", forbidden)


def _infer(weights: str, project: Path | str, *extra: str) -> list[str]:
    return ["profile", "infer", "--weights", weights, *TINY, "--project", str(project), *extra]


def _old_set(project: Path) -> Path:
    """A previous version's set (no marker) the next run may replace."""
    target = project / "infer"
    target.mkdir(parents=True)
    (target / "profile.json").write_text("old")
    return target


def _leftovers(project: Path) -> list[str]:
    return sorted(p.name for p in project.iterdir() if p.name.startswith("."))


def test_infer_refuses_to_replace_a_folder_it_did_not_make(
    weights: str, tmp_path: Path, no_model: None
) -> None:
    target = tmp_path / "infer"
    target.mkdir()
    (target / "results.csv").write_text("a week of experiments")
    result = invoke(_infer(weights, tmp_path))
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == f"refusing to replace {target}: {REFUSE}\n"
    assert (target / "results.csv").read_text() == "a week of experiments"


def test_a_refused_folder_is_the_only_line_even_when_imgsz_would_be_rounded(
    weights: str, tmp_path: Path, no_model: None
) -> None:
    target = tmp_path / "infer"
    target.mkdir()
    (target / "results.csv").write_text("mine")
    argv = _infer(weights, tmp_path)
    argv[argv.index("--imgsz") + 1] = "100"
    result = invoke(argv)
    assert result.status == 2
    assert result.stderr == f"refusing to replace {target}: {REFUSE}\n"


def test_infer_refuses_a_plain_file_at_its_folder(
    weights: str, tmp_path: Path, no_model: None
) -> None:
    (tmp_path / "infer").write_text("mine")
    result = invoke(_infer(weights, tmp_path, "--json"))
    assert result.status == 2
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "bad_destination"
    assert (
        error["message"]
        == f"refusing to replace {tmp_path / 'infer'}: it is not a profile folder made by libreyolo"
    )
    assert (tmp_path / "infer").read_text() == "mine"


@pytest.mark.parametrize(
    ("project", "reason"),
    [
        ("file", "it is a file, not a folder"),
        ("file/p", "a part of it is a file, not a folder"),
        ("n" * 256, "a name in it is too long"),
    ],
)
def test_an_unusable_project_exits_2_in_one_line(
    weights: str, tmp_path: Path, no_model: None, project: str, reason: str
) -> None:
    (tmp_path / "file").write_text("a file")
    result = invoke(_infer(weights, tmp_path / project))
    assert result.status == 2
    assert (
        result.stderr == f"cannot write {tmp_path / project}: {reason} (choose another --project)\n"
    )


def test_a_read_only_project_exits_2(
    weights: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_model: None
) -> None:
    # As root a chmod does not stop writes; the file system's answer is simulated instead.
    def read_only(target: Path, tag: str) -> Path:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(target.parent))

    monkeypatch.setattr("libreyolo.measure.artifacts._fresh_dir", read_only)
    result = invoke(_infer(weights, tmp_path))
    assert result.status == 2
    assert result.stderr == (
        f"cannot write {tmp_path}: the file system is read-only (choose another --project)\n"
    )


def test_a_failing_stage_exits_3_and_keeps_the_previous_set(
    weights: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(source: str | None) -> list[Path]:
        raise ValueError("unreadable folder")

    monkeypatch.setattr("libreyolo.workload.images.load_images", broken)
    target = _old_set(tmp_path)
    result = invoke(_infer(weights, tmp_path))
    assert result.status == 3
    assert result.stderr == (
        "stage 'load images' failed: ValueError: unreadable folder (check the source images)\n"
    )
    assert (target / "profile.json").read_text() == "old" and _leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "error", [MemoryError(), RuntimeError("DefaultCPUAllocator: can't allocate memory")]
)
def test_running_out_of_memory_exits_3_with_what_to_change(
    weights: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    def exhausted(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr("libreyolo.workload.yolo9.predict.postprocess", exhausted)
    target = _old_set(tmp_path)
    result = invoke(_infer(weights, tmp_path))
    assert result.status == 3
    assert result.stderr == "out of memory in stage 'measure' (lower --batch or --imgsz)\n"
    assert (target / "profile.json").read_text() == "old" and _leftovers(tmp_path) == []


def test_a_full_disk_exits_3_with_what_to_change(
    weights: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(profile: object, path: Path, **kwargs: object) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr("libreyolo.measure.assemble.save", full)
    target = _old_set(tmp_path)
    result = invoke(_infer(weights, tmp_path))
    assert result.status == 3
    assert result.stderr == (
        f"disk full writing {target / 'profile.json'} (free space or choose another --project)\n"
    )
    assert (target / "profile.json").read_text() == "old" and _leftovers(tmp_path) == []


def test_an_imgsz_off_the_stride_is_rounded_with_a_note_and_recorded(
    weights: str, tmp_path: Path
) -> None:
    argv = _infer(weights, tmp_path)
    argv[argv.index("--imgsz") + 1] = "100"
    result = invoke(argv)
    assert result.status == 0, result.stderr
    note = "--imgsz 100 rounded to 128 (a multiple of the model stride 32)"
    assert result.stderr == f"note: {note}\n"  # one line, through the CLI's Output
    document = json.loads((tmp_path / "infer" / "profile.json").read_text())
    assert document["run"]["imgsz"] == 128
    assert document["run"]["config"]["imgsz"] == 128
    assert note in document["notes"] and "notes" not in document["run"]["config"]


def test_under_json_a_note_stays_off_stderr_and_in_the_profile(
    weights: str, tmp_path: Path
) -> None:
    argv = _infer(weights, tmp_path)
    argv[argv.index("--imgsz") + 1] = "100"
    result = invoke([*argv, "--json"])
    assert result.status == 0 and result.stderr == ""
    notes = json.loads((tmp_path / "infer" / "profile.json").read_text())["notes"]
    assert notes == ["--imgsz 100 rounded to 128 (a multiple of the model stride 32)"]


def test_a_broken_config_yaml_exits_2_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("a: [1, 2\n")
    result = invoke(["profile", "infer", "--config-dir", str(tmp_path), "--config", "bad"])
    assert result.status == 2
    # libyaml and PyYAML word the problem differently; the place and the shape are the same
    assert re.fullmatch(
        re.escape(f"{tmp_path / 'bad.yaml'}: not valid YAML: ")
        + r"[^\n]*expected ',' or '\]'[^\n]* \(line 2, column 1\) \(fix the file\)\n",
        result.stderr,
    )


def _laughs(folder: Path, levels: int) -> Path:
    """A "billion laughs" YAML: `levels` levels of ten aliases each, 10**levels values."""
    lines = ['l0: &l0 "lol"']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    path = folder / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_billion_laughs_config_is_refused_before_hydra_expands_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Scaled down (10**4 values, cap 1000) so that code without the bound only wastes a moment.
    monkeypatch.setattr("libreyolo.config.compose.MAX_CONFIG_NODES", 1000)
    path = _laughs(tmp_path, 4)
    result = invoke(["profile", "infer", "--config-dir", str(tmp_path), "--config", "laughs"])
    assert result.status == 2
    assert result.stderr == (
        f"{path}: its aliases expand to more than 1000 YAML nodes "
        "(nested aliases, a 'billion laughs' file?)\n"
    )


def test_the_alias_bound_counts_a_full_billion_laughs_without_expanding_it(
    tmp_path: Path,
) -> None:
    from libreyolo.config.compose import ConfigError, check_config_files

    _laughs(tmp_path, 9)  # 10**9 values: minutes and gigabytes inside OmegaConf
    with pytest.raises(ConfigError, match="expand to more than 100000 YAML nodes"):
        check_config_files(tmp_path)


def test_a_result_that_cannot_be_shown_is_one_line_not_a_traceback(reference_v1: Path) -> None:
    class Broken(Output):
        def emit(self, result: object, source: object) -> None:
            raise ValueError("cannot render NaN")

    err = io.StringIO()
    status = main(
        ["profile", "summary", str(reference_v1 / "infer_b1.profile.json")],
        output=Broken(io.StringIO(), err),
    )
    assert status == 1
    assert err.getvalue() == (
        "internal error: ValueError: cannot render NaN (run again with --debug for the traceback)\n"
    )


def test_sigterm_during_a_command_unwinds_to_status_143(monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(args: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends
        raise AssertionError("SIGTERM did not interrupt the command")

    def unhandled(signum: int, frame: object) -> None:
        raise RuntimeError("SIGTERM reached the test's own handler")

    monkeypatch.setattr("libreyolo.cli.commands.infer", killed)
    previous = signal.signal(signal.SIGTERM, unhandled)
    try:
        result = invoke(["profile", "infer", "--device", "cpu"])
        assert signal.getsignal(signal.SIGTERM) is unhandled  # restored after the command
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert result.status == 143 and result.stderr == "terminated\n"


def test_a_second_sigterm_cannot_cut_the_cleanup_short() -> None:
    from libreyolo.cli.main import _sigterm_unwinds
    from libreyolo.errors import Terminated

    with pytest.raises(Terminated), _sigterm_unwinds():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # the handler raises before this ends
        finally:
            assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN  # while unwinding
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_the_outcome_names_the_trace_of_an_experiments_run(weights: str, tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "exp.yaml").write_text(  # the experiment's own window and data
        "defaults:\n  - profile\n  - override mode: run\n  - override dataset: synthetic\n"
        "  - _self_\nbatch: 2\nimgsz: 64\nwindow:\n  warmup: 1\n  steps: 2\n"
        "dataset:\n  workers: 0\n"
    )
    argv = [
        "profile",
        "run",
        "synthetic",
        "--config-dir",
        str(tmp_path / "conf"),
        "--config",
        "exp",
    ]
    argv += ["--weights", weights, "--device", "cpu", "--project", str(tmp_path / "p"), "--json"]
    result = invoke(argv)
    assert result.status == 0, result.stderr
    out = result.json()
    assert isinstance(out, dict)
    assert out["trace"] == str(tmp_path / "p" / "run" / "profile_trace.json")
    assert Path(out["trace"]).is_file()
