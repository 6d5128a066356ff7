"""A reader killed outright leaves no reader process or spool file behind, and a trace that
changes while it is read fails instead of giving a result mixed from two versions of it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from libreyolo.kineto import events, source, workers
from libreyolo.kineto.events import read_trace
from libreyolo.kineto.lifeline import die_with_parent
from tests.conftest import ROOT, invoke
from tests.kineto.conftest import event, kernel, launch

NEVER_A_PID = (1 << 22) + 1  # above the largest pid_max Linux allows


def _trace(steps: int) -> dict[str, Any]:
    trace_events: list[dict[str, Any]] = []
    for i in range(steps):
        trace_events.append(event("cpu_op", "aten::add", 10.0 * i, 4.0))
        trace_events.append(launch(10.0 * i + 1, corr=i))
        trace_events.append(kernel(f"k{i % 3}", 10.0 * i + 2, 3.0, corr=i))
    return {"traceEvents": trace_events}


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "CHUNK_BYTES", 300)
    monkeypatch.setattr(source, "PARALLEL_MIN_BYTES", 3 * 300)


# --- a reader killed outright -------------------------------------------------------------------

# The reader under test: small chunks so that a 2 MB trace takes the parallel paths, each read
# slowed so that the kill comes mid-read, spool files under argv[3].
_READER = """
import sys, time
from pathlib import Path
from libreyolo.kineto import events, source, workers
source.CHUNK_BYTES, source.PARALLEL_MIN_BYTES = 4096, 3 * 4096
workers._SHM = Path(sys.argv[3])
read = source.ByteSource.read
def slow(self, size=None):
    time.sleep(0.05)
    return read(self, size)
source.ByteSource.read = slow
events.read_trace(sys.argv[1], workers=int(sys.argv[2]), spool_ops=(lambda n: False,) * 2)
"""


def _session(sid: int) -> list[int]:
    """The live processes of session `sid` (a zombie is dead); they keep the session when
    their parent dies, unlike their parent pid."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            state, _ppid, _group, session = stat[stat.rindex(")") + 2 :].split()[:4]
            if int(session) == sid and state != "Z":
                found.append(int(entry.name))
    return found


def _within(seconds: float, done: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.skipif(sys.platform != "linux", reason="only Linux reads in parallel")
@pytest.mark.parametrize(("count", "children"), [(2, 1), (3, 2)], ids=["halves", "pool"])
def test_a_killed_reader_leaves_no_process_and_no_spool_file(
    count: int, children: int, tmp_path: Path
) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_trace(3500)))  # 2 MB: a second half of 256 slowed reads
    spool = tmp_path / "spool"
    spool.mkdir()
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER, str(path), str(count), str(spool)],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(spool)},
        start_new_session=True,  # its children keep its session id: how they are found
    )
    try:
        started = _within(30, lambda: len(_session(reader.pid)) > children)
        assert started, f"the reader did not fork {children} reader(s) (exit {reader.poll()})"
        reader.kill()
        reader.wait()
        assert _within(5, lambda: not _session(reader.pid)), "a forked reader outlived it"
        assert _within(5, lambda: not any(spool.iterdir())), list(spool.rglob("*"))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(reader.pid, signal.SIGKILL)
        reader.wait()


# A reader whose main thread (the one that forked) ends before its other threads: how a SIGKILL
# can take a threaded reader apart. The worker's signal then comes while `getppid()` still names
# the reader. The leader ends by the raw exit system call, which ends one thread only.
_THREADED_READER = """
import ctypes, os, sys, threading, time
from pathlib import Path
from libreyolo.kineto import workers
spool, reader = sys.argv[1], os.getpid()
threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
if os.fork() == 0:
    workers._bind_to_reader(spool, reader)
    Path(spool, "0").write_bytes(b"part")
    time.sleep(600)
    os._exit(0)
while not Path(spool, "0").exists():
    time.sleep(0.01)
ctypes.CDLL(None).syscall({"x86_64": 60, "aarch64": 93}[os.uname().machine], 0)
"""


@pytest.mark.skipif(
    sys.platform != "linux" or os.uname().machine not in ("x86_64", "aarch64"),
    reason="ends one thread by its Linux system call number",
)
def test_a_worker_removes_the_spool_when_the_readers_forking_thread_ends_first(
    tmp_path: Path,
) -> None:
    spool = tmp_path / "libreyolo-spool-x"
    spool.mkdir()
    reader = subprocess.Popen(
        [sys.executable, "-c", _THREADED_READER, str(spool)], cwd=ROOT, start_new_session=True
    )
    try:
        assert _within(30, lambda: not spool.exists()), list(spool.rglob("*"))
        assert _within(5, lambda: not _session(reader.pid)), "the worker outlived it"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(reader.pid, signal.SIGKILL)
        reader.wait()


@pytest.mark.skipif(sys.platform != "linux", reason="only Linux reads in parallel")
def test_a_child_whose_parent_died_before_it_asked_dies_at_once() -> None:
    pid = os.fork()
    if pid == 0:  # the child: as if its parent had died between the fork and the request
        try:
            die_with_parent(signal.SIGKILL, NEVER_A_PID)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


@pytest.mark.usefixtures("small_chunks")
def test_a_pool_removes_spool_folders_of_readers_that_are_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader killed with its workers left its spool folder: the next pool removes it, and
    leaves a live reader's alone."""
    spool = tmp_path / "spool"
    gone, live = spool / f"libreyolo-spool-{NEVER_A_PID}-x", spool / "libreyolo-spool-1-y"
    for folder in (gone, live):
        folder.mkdir(parents=True)
        (folder / "0").write_bytes(b"part")
    monkeypatch.setattr(workers, "_SHM", spool)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_trace(100)))
    assert len(read_trace(path, workers=3)) == 300
    assert list(spool.iterdir()) == [live]


# --- a trace that changes while it is read ------------------------------------------------------


def _append(path: Path) -> None:
    with path.open("ab") as file:
        file.write(b"\n\n")  # still valid JSON: only the sizes tell


def _rewrite_in_place(path: Path) -> None:
    with path.open("r+b") as file:
        text = file.read()
        file.seek(0)
        file.write(text.replace(b'"dur": 4.0', b'"dur": 5.0'))  # same size


def _truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("count", [1, 2, 3], ids=["one process", "halves", "pool"])
@pytest.mark.parametrize(
    ("change", "how"),
    [
        (_append, "its size went from"),
        (_rewrite_in_place, "it was rewritten in place"),
        (_truncate, "its size went from"),
    ],
    ids=["appended", "rewritten", "truncated"],
)
def test_a_trace_that_changes_while_it_is_read_cannot_be_analysed(
    count: int,
    change: Callable[[Path], None],
    how: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_trace(100)))
    os.utime(path, ns=(10**18, 10**18))  # written long ago: any write moves its time
    assert invoke(["profile", "summary", str(path)]).status == 0
    read, reads = source.ByteSource.read, [0]

    def changing(self: source.ByteSource, size: int | None = None) -> bytes:
        reads[0] += 1
        if reads[0] == 3:  # mid-read, in whichever process reads (each of the halves does)
            change(path)
        return read(self, size)

    monkeypatch.setattr(source.ByteSource, "read", changing)
    monkeypatch.setattr(events, "default_workers", lambda: count)
    result = invoke(["profile", "summary", str(path)])
    assert result.status == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(
        f"failed to analyse {path}: the trace changed while it was read; {how}"
    )
    assert result.stdout == ""
