"""Bounded reading through the reader CLI: only regular files, and no read past the limits.

Devices, FIFOs and sockets run in a child interpreter with a timeout and 1 GiB of address
space, so a regression (reading /dev/zero, blocking on a FIFO) fails the test, not the machine.
"""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from libreyolo.document import files
from libreyolo.document.codec import to_json_bytes
from libreyolo.document.limits import MAX_INPUT_BYTES, parse_size
from libreyolo.document.model import Profile, RunInfo, Tool
from libreyolo.errors import UsageError
from tests.conftest import CliResult, invoke

ROOT = Path(__file__).resolve().parents[2]
READERS = [
    ["summary"],
    ["get"],
    ["get", "@", "img_per_s"],
    ["phases"],
    ["kernels"],
    ["ops"],
    ["what-if", "@", "--remove-launches", "1"],
    ["compare", "@", "@"],
]
LIMIT_HINT = "(raise it with --max-input-bytes)"
_CHILD = """
import dataclasses, json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from tests.conftest import invoke
results = [dataclasses.asdict(invoke(argv)) for argv in json.loads(sys.argv[1])]
status = open("/proc/self/status").read()
print(json.dumps({"results": results, "peak_kb": int(status.split("VmHWM:")[1].split()[0])}))
"""


def _argv(reader: list[str], path: str, *extra: str) -> list[str]:
    """`profile <reader> ...` with `path` as its input (in place of each `@`)."""
    words = [path if word == "@" else word for word in reader]
    return ["profile", words[0], *([path] if "@" not in reader else []), *words[1:], *extra]


def _in_child(argvs: list[list[str]]) -> tuple[list[CliResult], int]:
    """Run CLI lines in one child interpreter: (their results, its peak memory in kB)."""
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(argvs)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=60,
    )
    report = json.loads(proc.stdout)
    return [CliResult(**result) for result in report["results"]], report["peak_kb"]


def _assert_one_line(result: CliResult, status: int, line: str) -> None:
    assert (result.status, result.stdout, result.stderr) == (status, "", line + "\n")


def _profile_bytes() -> bytes:
    profile = Profile(
        kind="infer",
        created="2025-01-02T03:04:05Z",
        tool=Tool(version="2.0.0"),
        run=RunInfo(mode="inference", batch=1),
        metrics={"img_per_s": 12.5},
    )
    return to_json_bytes(profile)


def _gzip(path: Path, head: bytes, filler: bytes, size_bytes: int) -> Path:
    """A gzip file of `head` and then `size_bytes` of `filler`, built block by block."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = filler * ((1 << 20) // len(filler))
    with path.open("wb") as out:
        out.write(packer.compress(head))
        for _ in range(size_bytes // len(block)):
            out.write(packer.compress(block))
        out.write(packer.flush())
    return path


# --- only regular files ----------------------------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux /proc")
def test_devices_fifos_and_sockets_exit_2_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    sock = tmp_path / "sock.json"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    kinds = {"/dev/zero": "a character device", str(fifo): "a FIFO", str(sock): "a socket"}
    cases = [(path, reader) for path in kinds for reader in READERS]
    try:
        results, _ = _in_child([_argv(reader, path) for path, reader in cases])
    finally:
        server.close()
    for (path, _reader), result in zip(cases, results, strict=True):
        line = (
            f"not a regular file: {path} ({kinds[path]}) (pass profile.json or profile_trace.json)"
        )
        _assert_one_line(result, 2, line)


def test_sniff_and_load_refuse_a_device() -> None:
    for call in (files.sniff, files.load):
        with pytest.raises(UsageError) as caught:
            call("/dev/null")
        assert caught.value.status == 2
        assert caught.value.message == "not a regular file: /dev/null (a character device)"


# --- the input limit -------------------------------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux /proc")
def test_gzip_bombs_stop_at_the_limit_in_bounded_memory(tmp_path: Path) -> None:
    profile = _gzip(tmp_path / "p.json.gz", _profile_bytes()[:-1], b"\0", 64 << 20)
    trace = _gzip(tmp_path / "t.json.gz", b'{"traceEvents": [', b" \n", 64 << 20)
    zeros = _gzip(tmp_path / "z.json.gz", b"", b"\0", 64 << 20)
    argvs = [_argv(reader, str(p), "--max-input-bytes", "8M") for p in (profile, trace, zeros)
             for reader in (["summary"], ["get", "@", "img_per_s"])]  # fmt: skip
    results, peak_kb = _in_child(argvs)
    for argv, result in zip(argvs, results, strict=True):
        path = next(word for word in argv if word.endswith(".gz"))
        message = f"failed to analyse {path}: exceeds the input limit of {8 << 20} bytes"
        _assert_one_line(result, 1, f"{message} {LIMIT_HINT}")
    assert peak_kb < 150 << 10  # a 64 MiB inflation never held: the child stops at 8 MiB


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux /proc")
def test_plain_file_over_the_limit_is_refused_by_its_size(tmp_path: Path) -> None:
    sparse = tmp_path / "huge.json"
    with sparse.open("wb") as out:  # 5 GiB that take no disk; reading them would take minutes
        out.write(b'{"traceEvents": [')
        out.truncate(MAX_INPUT_BYTES + (1 << 30))
    results, peak_kb = _in_child([_argv(reader, str(sparse)) for reader in READERS])
    message = f"failed to analyse {sparse}: exceeds the input limit of {MAX_INPUT_BYTES} bytes"
    for result in results:
        _assert_one_line(result, 1, f"{message} {LIMIT_HINT}")
    assert peak_kb < 150 << 10


def test_limit_flag_lowers_the_limit_for_a_plain_trace(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_bytes(b'{"traceEvents": [' + b" " * 5000 + b"]}")
    result = invoke(["profile", "summary", str(trace), "--max-input-bytes", "4K"])
    message = f"failed to analyse {trace}: exceeds the input limit of 4096 bytes"
    _assert_one_line(result, 1, f"{message} {LIMIT_HINT}")


@pytest.mark.parametrize(
    ("text", "size"),
    [("1", 1), ("4096", 4096), ("512K", 512 << 10), ("64M", 64 << 20), ("8g", 8 << 30),
     ("2GiB", 2 << 30), ("1 T", 1 << 40)],
)  # fmt: skip
def test_parse_size_reads_binary_suffixes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["0", "-1", "1.5G", "lots", "", "8X"])
def test_limit_flag_refuses_what_is_not_a_size(text: str, tmp_path: Path) -> None:
    result = invoke(["profile", "get", str(tmp_path / "p.json"), "--max-input-bytes", text])
    _assert_one_line(
        result,
        2,
        "libreyolo profile get: argument --max-input-bytes: must be a positive size in bytes "
        f"(e.g. 512M, 8G), got {text} (see 'libreyolo profile get --help')",
    )


# --- profile.json: a sane size, read with a bounded read --------------------------------------


def test_profile_over_64_mib_is_refused_before_parsing(tmp_path: Path) -> None:
    plain = tmp_path / "big.json"
    with plain.open("wb") as out:
        out.write(_profile_bytes()[:-1])
        out.truncate((64 << 20) + 1)
    packed = _gzip(tmp_path / "big.json.gz", _profile_bytes()[:-1], b" ", 65 << 20)
    for path in (plain, packed):
        for reader in (["summary"], ["get", "@", "img_per_s"]):
            _assert_one_line(
                invoke(_argv(reader, str(path))),
                1,
                f"failed to analyse {path}: more than 64 MiB, too large for a profile document "
                "(a profile is kilobytes)",
            )


def test_stdin_is_read_within_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _profile_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b" " * 5000 + data)))
    result = invoke(["profile", "get", "-", "img_per_s", "--max-input-bytes", "4K"])
    message = "failed to analyse -: exceeds the input limit of 4096 bytes"
    _assert_one_line(result, 1, f"{message} {LIMIT_HINT}")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert invoke(["profile", "get", "-", "img_per_s", "--max-input-bytes", "4K"]).stdout


def test_padded_trace_is_recognised_as_a_trace(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"  # the tags sit past the first 256 kB, behind whitespace
    trace.write_bytes(b" " * (1 << 20) + b'{"traceEvents": []}')
    _assert_one_line(
        invoke(["profile", "summary", str(trace)]),
        1,
        f"failed to analyse {trace}: the trace holds no events "
        "(profile at least one step with torch.profiler before exporting the trace)",
    )


# --- one string over its cap -----------------------------------------------------------------


def test_trace_string_over_16_mib_is_refused(tmp_path: Path) -> None:
    head = b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "'
    trace = tmp_path / "t.json"
    trace.write_bytes(head + b"k" * ((16 << 20) + 10) + b'", "ts": 1, "dur": 1}]}')
    result = invoke(["profile", "kernels", str(trace)])
    at = len(head) - 1
    _assert_one_line(
        result,
        1,
        f"failed to analyse {trace}: a string of more than {16 << 20} bytes at byte {at} "
        "(pass a Chrome trace written by torch.profiler (.json or .json.gz))",
    )
    assert not re.search(r"k{100}", result.stderr)
