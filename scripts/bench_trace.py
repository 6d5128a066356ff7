"""Benchmark the trace analyser against `json.load` on one large synthetic Chrome trace.

Builds a trace of at least --size-mb MB by repeating the A100 fixture's ProfilerSteps with shifted
timestamps, step numbers and correlation ids (stream-written to a temporary directory, never held
in memory), then times, each in a fresh subprocess, `libreyolo.kineto.analyse_trace` and
`json.load` on that file. Throughput is file size / wall time including interpreter start-up and
imports; peak RSS is the child's ru_maxrss, and on Linux also the summed RSS of the child and
its decoding workers (the larger counts against the target). Prints both side by side with the
targets: analyser >= 100 MB/s and peak RSS <= 0.6 x file size + 150 MB.

    .venv/bin/python scripts/bench_trace.py --size-mb 100
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import msgspec

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "tests/fixtures/gpu_traces/hta_a100_ddp_train_3steps.json.gz"
)
MB = 1_000_000
MIN_MB_PER_S = 100.0  # the analyser must read at least this fast, start-up included
RSS_PER_FILE_BYTE = 0.6  # peak RSS may grow with the file by at most this factor ...
RSS_BASE_MB = 150.0  # ... on top of this base (interpreter, imports, buffers)

ANALYSE = (
    "import sys; from libreyolo.kineto import analyse_trace; a = analyse_trace(sys.argv[1]); "
    "print(f'{a.num_steps} steps, {a.num_kernels} kernels, util {a.gpu_busy_ms / a.window_ms:.3f}')"
)
JSON_LOAD = "import json, sys; print(len(json.load(open(sys.argv[1]))['traceEvents']), 'events')"


def build_trace(path: Path, size_mb: float, fixture: Path) -> tuple[int, int]:
    """Write a trace of at least size_mb MB; return (events, steps) written."""
    with gzip.open(fixture) as stream:
        doc = json.load(stream)
    events: list[dict[str, Any]] = doc.pop("traceEvents")
    starts = [e["ts"] for e in events if isinstance(e.get("ts"), float | int)]
    period = max(e["ts"] + e.get("dur", 0) for e in events if "ts" in e) - min(starts) + 1000.0
    steps = sum(1 for e in events if _is_step(e))
    corr_span = 1 + max(_ids(events, "ac2g"))
    flow_span = 1 + max(_ids(events, "fwdbwd"), default=0)
    written = repeat = 0
    with open(path, "wb") as out:
        header = msgspec.json.encode({k: v for k, v in doc.items() if k != "displayTimeUnit"})
        out.write(header[:-1] + b', "traceEvents": [\n')
        while out.tell() < size_mb * MB:
            shifted = [_shift(e, repeat, period, steps, corr_span, flow_span) for e in events]
            body = msgspec.json.format(msgspec.json.encode(shifted), indent=0)[1:-1]
            out.write((b",\n" if repeat else b"") + body.replace(b'}, {"', b'},\n{"'))
            written += len(shifted)
            repeat += 1
        out.write(b'\n], "displayTimeUnit": "ms"}\n')
    return written, steps * repeat


def _is_step(event: dict[str, Any]) -> bool:
    return event.get("cat") == "user_annotation" and event["name"].startswith("ProfilerStep#")


def _ids(events: list[dict[str, Any]], cat: str) -> list[int]:
    ids = [e["id"] for e in events if e.get("cat") == cat and "id" in e]
    if cat == "ac2g":
        ids += [e["args"]["correlation"] for e in events if "correlation" in e.get("args", {})]
    return ids


def _shift(
    event: dict[str, Any], repeat: int, period: float, steps: int, corr_span: int, flow_span: int
) -> dict[str, Any]:
    """A copy of event, `repeat` periods later, with its own step number and ids."""
    if not repeat:
        return event
    event = dict(event)
    if isinstance(event.get("ts"), float | int):
        event["ts"] += repeat * period
    if _is_step(event):
        number = int(event["name"].removeprefix("ProfilerStep#"))
        event["name"] = f"ProfilerStep#{number + repeat * steps}"
    if "correlation" in event.get("args", {}):
        event["args"] = dict(
            event["args"], correlation=event["args"]["correlation"] + repeat * corr_span
        )
    if "id" in event:
        event["id"] += repeat * (corr_span if event.get("cat") == "ac2g" else flow_span)
    return event


def measure(code: str, path: Path) -> tuple[float, float, float | None, str]:
    """(wall s, peak RSS MB of the child, peak memory MB of the child and its worker processes
    together where /proc allows, stdout) of `python -c code path` in a fresh process."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE)
    sampler = _TreeRss(child.pid)
    assert child.stdout is not None
    output = child.stdout.read().decode().strip()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    sampler.stop()
    if status:
        raise SystemExit(f"benchmark child failed ({status}): {code}")
    rss_kb = usage.ru_maxrss / (1024 if sys.platform == "darwin" else 1)  # macOS reports bytes
    return wall, rss_kb * 1024 / MB, sampler.peak_mb, output


class _TreeRss(threading.Thread):
    """Samples the memory of a process and its descendants together (Linux /proc), every 50 ms.

    ru_maxrss covers one process; the analyser may fork decoding workers, whose memory counts too.
    Forked processes share pages, so the sum is of PSS (each shared page divided among its users),
    which adds up to the memory the whole tree really holds.
    """

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.peak_mb: float | None = 0.0 if Path("/proc/self/smaps_rollup").exists() else None
        self._done = threading.Event()
        if self.peak_mb is not None:
            self.start()

    def run(self) -> None:
        while not self._done.wait(0.05):
            kb = sum(_pss_kb(pid) for pid in _descendants(self.root))
            self.peak_mb = max(self.peak_mb or 0.0, kb * 1024 / MB)

    def stop(self) -> None:
        self._done.set()
        if self.is_alive():
            self.join()


def _descendants(root: int) -> list[int]:
    """root and its descendants, from /proc/<pid>/task/<tid>/children."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        for children in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                todo += [int(child) for child in children.read_text().split()]
            except (OSError, ValueError):
                continue
    return found


def _pss_kb(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:")), 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=500.0, help="trace size (default 500)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per reader; best wall time")
    parser.add_argument("--fixture", type=Path, default=FIXTURE, help="trace to repeat")
    parser.add_argument("--keep", type=Path, help="write the trace here (or reuse it) and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = args.keep or Path(scratch) / "bench_trace.json"
        if not path.exists():
            events, steps = build_trace(path, args.size_mb, args.fixture)
            print(f"built {path}: {events:,} events, {steps} ProfilerSteps")
        report(path, max(args.repeat, 1))


def report(path: Path, repeat: int) -> None:
    """Run both readers, print the table and the verdict on the two targets."""
    size_mb = path.stat().st_size / MB
    print(f"trace: {size_mb:.1f} MB, {os.cpu_count()} CPUs, best of {repeat}")
    print(f"{'reader':<14}{'wall s':>8}{'MB/s':>8}{'RSS MB':>9}{'tree PSS MB':>13}  output")
    peaks: dict[str, tuple[float, float]] = {}
    for label, code in (("analyse_trace", ANALYSE), ("json.load", JSON_LOAD)):
        runs = [measure(code, path) for _ in range(repeat)]
        wall = min(run[0] for run in runs)
        rss = max(run[1] for run in runs)
        tree = max((run[2] for run in runs if run[2] is not None), default=None)
        peaks[label] = (size_mb / wall, max(rss, tree or 0.0))
        shown = f"{tree:13.1f}" if tree is not None else f"{'n/a':>13}"
        print(f"{label:<14}{wall:8.2f}{size_mb / wall:8.1f}{rss:9.1f}{shown}  {runs[0][3]}")
    speed, memory = peaks["analyse_trace"]
    budget = RSS_PER_FILE_BYTE * size_mb + RSS_BASE_MB
    fast = _verdict(speed >= MIN_MB_PER_S)
    print(f"analyser speed {speed:.0f} MB/s, target >= {MIN_MB_PER_S:.0f}: {fast}")
    print(
        f"analyser peak RSS {memory:.0f} MB, target <= {budget:.0f}: {_verdict(memory <= budget)}"
    )


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


if __name__ == "__main__":
    main()
