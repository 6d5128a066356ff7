"""Benchmark the trace analyser per trace size against msgspec's untyped decoder (and HTA's load).

For each size (default 64, 256 and 1024 MB) it builds a trace by repeating the A100 fixture's
ProfilerSteps with shifted timestamps, step numbers and correlation ids, stream-written under a
temporary directory (never held in memory) as `.json` and then `.json.gz`, deleted after its
size. Each reader runs in a fresh process (`python -c`, interpreter start-up and imports
included), the analyser and the decoder alternated, and the median wall time is printed with
MB/s (file bytes / wall), peak memory (the largest of the child's own high-water mark, VmHWM,
its largest decoding worker's, and their summed PSS) and the ratio decoder wall / analyser wall.
HolisticTraceAnalysis's `Trace.load_traces` of the same `.json` runs beside them up to
--hta-max-mb (skipped with a line where `hta` is not importable). The untyped decode holds the
whole document (about 5 bytes per file byte), so above --decode-max-mb it is skipped, and so is
the ratio. `--trace FILE` measures an existing trace too (a real CPU training trace, say).
Targets (issue 27): the analyser >= 2.5x the untyped decode, and peak <= 100 MB at every size.

    .venv/bin/python scripts/bench_trace.py
    .venv/bin/python scripts/bench_trace.py --sizes 64 --trace runs/profile/run/profile_trace.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "tests/fixtures/gpu_traces/hta_a100_ddp_train_3steps.json.gz"
)
MB = 1_000_000
MIN_DECODE_RATIO = 2.5  # the analyser must beat the untyped decode by this factor ...
MAX_PEAK_MB = 100.0  # ... and stay under this peak whatever the trace's size
GZIP_LEVEL = 1  # fast to write; the analyser's cost is inflating, whatever the level

# Every child ends by printing the larger (kB) of its own high-water mark and the largest of its
# finished workers' (a worker decodes whole runs: its peak can be the tree's largest), last.
_HWM = (
    "; import re, resource; print(max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,"
    " int(re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read())[1])"
    " if sys.platform == 'linux' else 0))"
)
ANALYSE = (
    "import sys; from libreyolo.kineto import analyse_trace; a = analyse_trace(sys.argv[1]); "
    "print(f'{a.num_steps} steps, {a.num_kernels} kernels, {len(a.ops)} ops')" + _HWM
)
DECODE = (
    "import sys, msgspec; d = msgspec.json.decode(open(sys.argv[1], 'rb').read()); "
    "print(len(d['traceEvents']), 'events')" + _HWM
)
HTA = (
    "import logging, os, sys; logging.disable(logging.WARNING); "
    "from hta.common.trace import Trace; "
    "t = Trace(trace_files={0: sys.argv[1]}, trace_dir=os.path.dirname(sys.argv[1])); "
    "t.load_traces(use_multiprocessing=False, use_memory_profiling=False); "
    "print(len(t.traces[0]), 'rows')" + _HWM
)


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


@dataclass(frozen=True)
class Run:
    """One reader on one file: median wall s over its runs, peak MB, its output line."""

    wall_s: float
    peak_mb: float
    output: str


def measure(code: str, path: Path) -> tuple[float, float, str]:
    """(wall s, peak MB, output) of `python -c code path` in a fresh process; peak is the
    largest of the child's VmHWM, its largest worker's peak RSS and the summed PSS of it and
    its workers (Linux)."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    sampler = _TreeRss(child.pid)
    assert child.stdout is not None
    lines = child.stdout.read().decode().strip().splitlines()
    status = child.wait()
    wall = time.perf_counter() - start
    sampler.stop()
    if status or not lines:
        raise SystemExit(f"benchmark child failed ({status}): {code}")
    hwm_mb = int(lines[-1]) * 1024 / MB
    return wall, max(hwm_mb, sampler.peak_mb or 0.0), " ".join(lines[:-1])


def measure_all(readers: dict[str, str], path: Path, repeat: int) -> dict[str, Run]:
    """Each reader `repeat` times, alternated so that drift in the host's load hits all alike."""
    samples: dict[str, list[tuple[float, float, str]]] = {label: [] for label in readers}
    for _ in range(repeat):
        for label, code in readers.items():
            samples[label].append(measure(code, path))
    return {
        label: Run(
            statistics.median(run[0] for run in runs), max(run[1] for run in runs), runs[0][2]
        )
        for label, runs in samples.items()
    }


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


def hta_installed() -> bool:
    probe = [sys.executable, "-c", "import hta.common.trace"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=float, nargs="+", default=[64.0, 256.0, 1024.0], help="trace sizes, MB"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per reader (1 above 256 MB)")
    parser.add_argument("--decode-max-mb", type=float, default=300.0, help="largest decoded")
    parser.add_argument("--hta-max-mb", type=float, default=100.0, help="largest HTA loads")
    parser.add_argument("--no-gzip", action="store_true", help="skip the .json.gz copies")
    parser.add_argument("--trace", type=Path, action="append", default=[], help="a trace too")
    parser.add_argument("--fixture", type=Path, default=FIXTURE, help="trace to repeat")
    args = parser.parse_args()
    hta = hta_installed()
    print(f"{os.cpu_count()} CPUs; median of {args.repeat} alternated runs (1 above 256 MB)")
    if not hta:
        print("HolisticTraceAnalysis (hta) is not importable: its column is skipped")
    header = f"{'file':<26}{'reader':<10}{'wall s':>8}{'MB/s':>8}{'peak MB':>9}{'ratio':>7}  output"
    print(header)
    verdicts: list[bool] = []
    for path in args.trace:
        verdicts += bench_file(path, args, hta)
    for size_mb in args.sizes:
        with tempfile.TemporaryDirectory(prefix="bench_trace_") as scratch:
            path = Path(scratch) / f"trace_{size_mb:g}mb.json"
            build_trace(path, size_mb, args.fixture)
            verdicts += bench_file(path, args, hta)
            if not args.no_gzip:
                packed = path.with_suffix(".json.gz")
                with path.open("rb") as source, gzip.open(packed, "wb", GZIP_LEVEL) as sink:
                    shutil.copyfileobj(source, sink, 1 << 20)
                path.unlink()
                verdicts += bench_file(packed, args, hta, size_mb=size_mb)
    print(f"targets: ratio >= {MIN_DECODE_RATIO}, peak <= {MAX_PEAK_MB:.0f} MB: ", end="")
    print("PASS" if all(verdicts) else f"FAIL ({verdicts.count(False)} of {len(verdicts)})")


def bench_file(
    path: Path, args: argparse.Namespace, hta: bool, size_mb: float | None = None
) -> list[bool]:
    """Measure the readers on one file, print a row each; the verdicts on the targets.
    `size_mb`: the decompressed size (gzip), which MB/s is counted on."""
    size_mb = size_mb or path.stat().st_size / MB
    plain = not path.name.endswith(".gz")
    readers = {"analyser": ANALYSE}
    if plain and size_mb <= args.decode_max_mb:
        readers["decode"] = DECODE
    if plain and hta and size_mb <= args.hta_max_mb:
        readers["hta"] = HTA
    runs = measure_all(readers, path, args.repeat if size_mb <= 256 else 1)
    ours = runs["analyser"]
    verdicts = [ours.peak_mb <= MAX_PEAK_MB]
    for label, run in runs.items():
        ratio = ""
        if label == "decode":
            ratio = f"{run.wall_s / ours.wall_s:6.2f}x"
            verdicts.append(run.wall_s / ours.wall_s >= MIN_DECODE_RATIO)
        name = path.name if len(path.name) <= 25 else "..." + path.name[-22:]
        print(
            f"{name:<26}{label:<10}{run.wall_s:8.2f}{size_mb / run.wall_s:8.0f}"
            f"{run.peak_mb:9.1f}{ratio:>7}  {run.output}"
        )
    skipped = [label for label in ("decode", "hta") if label not in runs and plain]
    if skipped and (hta or skipped != ["hta"]):  # gzip rows are the analyser's only
        print(f"{'':<26}skipped: {', '.join(skipped)} (over its --*-max-mb)")
    return verdicts


if __name__ == "__main__":
    main()
