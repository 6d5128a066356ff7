"""Closed, full or abandoned standard streams: a valid result is never lost to stderr, and a
result stdout will not take is one line and the command's own status, never a traceback."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from libreyolo.boundary.output import Output
from libreyolo.cli.main import main
from tests.conftest import ROOT
from tests.fixture_files import YOLO9T, fixture_file

PROFILE = ROOT / "tests" / "fixtures" / "docs" / "train_yolo9t_cpu.profile.json"
SUMMARY_HEAD = "model LibreYOLO9t (yolo9)  |  5.61 img/s  |  step 1425.52 ms"
CLOSED_LINE = "cannot write the result to stdout: the stream was closed when the command started"


def _reader(argv: list[str], *, stdout: object, stderr: object) -> subprocess.CompletedProcess:
    """`libreyolo <argv>` as a real process whose descriptors 1 and 2 are what is given
    (None: closed at start, as the shell's `>&-` leaves them)."""

    def close_unset() -> None:
        for fd, given in ((1, stdout), (2, stderr)):
            if given is None:
                os.close(fd)

    return subprocess.run(
        [sys.executable, "-m", "libreyolo", *argv],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL if stdout is None else stdout,
        stderr=subprocess.DEVNULL if stderr is None else stderr,
        preexec_fn=close_unset,
        timeout=60,
    )


def test_a_closed_stdout_is_one_line_and_exit_1_for_a_reader() -> None:
    err = subprocess.PIPE
    done = _reader(["profile", "summary", str(PROFILE)], stdout=None, stderr=err)
    assert done.returncode == 1
    assert done.stderr.decode() == CLOSED_LINE + "\n"


def test_a_full_stdout_is_one_line_and_exit_1_for_a_reader() -> None:
    with open("/dev/full", "wb") as full:
        done = _reader(["profile", "summary", str(PROFILE)], stdout=full, stderr=subprocess.PIPE)
    assert done.returncode == 1
    assert done.stderr.decode() == "cannot write the result to stdout: No space left on device\n"


def test_a_reader_that_went_away_ends_the_command_quietly() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: every write is EPIPE, as after `| head` exits
    try:
        argv = ["profile", "summary", str(PROFILE)]
        done = _reader(argv, stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert done.returncode == 1 and done.stderr == b""  # no line, and no BrokenPipe traceback


@pytest.mark.parametrize("stderr", [None, "full"])
def test_a_closed_or_full_stderr_changes_no_result_and_no_status(stderr: str | None) -> None:
    with open("/dev/full", "wb") as full:
        err = None if stderr is None else full
        done = _reader(["profile", "summary", str(PROFILE)], stdout=subprocess.PIPE, stderr=err)
        missing = _reader(["profile", "summary", "/no/such/profile.json"], stdout=None, stderr=err)
    assert done.returncode == 0
    assert done.stdout.decode().splitlines()[0] == SUMMARY_HEAD
    assert missing.returncode == 2  # its line could not be shown; the status still says why


class _FullStream(io.StringIO):
    """A stream on a full disk, as stderr (line-buffered) is: every write fails."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


TINY_INFER = ["profile", "infer", "--weights", str(fixture_file(YOLO9T)), "--device", "cpu"]
TINY_INFER += ["--warmup", "0", "--runs", "2", "--imgsz", "64", "--no-trace"]


def test_a_measurement_whose_result_stdout_refuses_is_exit_3_with_its_files_written(
    tmp_path: Path,
) -> None:
    stderr = io.StringIO()
    status = main([*TINY_INFER, "--project", str(tmp_path)], output=Output(_FullStream(), stderr))
    assert status == 3
    assert stderr.getvalue().splitlines()[-1] == (
        "cannot write the result to stdout: No space left on device (the run's files are "
        "written: read them with `libreyolo profile summary`)"
    )
    assert (tmp_path / "infer" / "profile.json").is_file()


def test_a_full_stderr_does_not_stop_a_measurement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stdout = io.StringIO()
    monkeypatch.setattr(sys, "stderr", _FullStream())
    out = Output.for_terminal(json_mode=False, no_color=True)  # the console script's streams
    out.stdout = stdout
    status = main([*TINY_INFER, "--project", str(tmp_path)], output=out)
    assert status == 0
    assert stdout.getvalue().startswith("latency  p50 ")
    assert (tmp_path / "infer" / "profile.json").is_file()
