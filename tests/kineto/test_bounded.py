"""Bounded trace reading: padding anywhere reads the same in bounded memory; caps refuse."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from libreyolo.errors import AnalysisError
from libreyolo.kineto import events as events_module
from libreyolo.kineto.events import read_trace
from tests.kineto.conftest import event, kernel, launch
from tests.kineto.test_chunks import _canonical

ROOT = Path(__file__).resolve().parents[2]
PAD = " \n\t\r" * 25_000  # 100 kB of every JSON whitespace: many chunks of 4 kB


def _events(count: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for i in range(count):
        found.append(event("cpu_op", f"op   {i}  spaced", 10.0 * i, 4.0))
        found.append(launch(10.0 * i + 1, corr=i))
        found.append(kernel(f"k{i % 3}", 10.0 * i + 2, 3.0, corr=i, grid=[{"x": 1}]))
    return found


def _text(events: list[dict[str, Any]], pad: dict[str, str]) -> str:
    """A trace whose whitespace at each named place is `pad[place]` (default: none)."""

    def at(place: str) -> str:
        return pad.get(place, "")

    parts = []
    for i, item in enumerate(events):
        body = json.dumps(item, separators=(",", ":"))
        if i == 1:  # inside one event: after `{`, around a colon, before `}`
            body = body.replace('{"ph"', "{" + at("inside") + '"ph"', 1)
            body = body.replace('"cat":', '"cat"' + at("inside") + ":" + at("inside"), 1)
            body = body[:-1] + at("inside") + "}"
        parts.append(body)
    first = at("before_comma") + "," + at("between")  # padding after the first event only
    events_text = parts[0] + first + ",".join(parts[1:])
    return (
        at("leading")
        + "{"
        + at("head")
        + '"schemaVersion":1,'
        + at("head")
        + '"traceEvents"'
        + at("head")
        + ":"
        + at("head")
        + "["
        + at("between")
        + events_text
        + at("before_end")
        + "]"
        + at("tail")
        + ',"displayTimeUnit":'
        + at("tail")
        + '"ns"'
        + at("tail")
        + "}"
        + at("tail")
    )


class _Watch:
    """Stands in for the event decoder and records the longest text it was given."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.decoder = events_module._DECODER
        self.largest = 0
        monkeypatch.setattr(events_module, "_DECODER", self)

    def decode(self, text: bytes) -> Any:
        self.largest = max(self.largest, len(text))
        return self.decoder.decode(text)


PLACES = ["leading", "head", "between", "before_comma", "inside", "before_end", "tail"]


@pytest.fixture
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("libreyolo.kineto.source.CHUNK_BYTES", 4096)
    monkeypatch.setattr("libreyolo.kineto.source.PARALLEL_MIN_BYTES", 3 * 4096)


@pytest.mark.usefixtures("tiny_chunks")
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("place", [*PLACES, "everywhere"])
def test_padding_reads_like_no_padding(
    place: str, workers: int, monkeypatch: pytest.MonkeyPatch, write_trace: Callable[..., Path]
) -> None:
    events = _events(60)
    pad = dict.fromkeys(PLACES, PAD) if place == "everywhere" else {place: PAD}
    plain = read_trace(write_trace(_text(events, {}), "plain.json"), workers=1)
    watch = _Watch(monkeypatch)
    padded = read_trace(write_trace(_text(events, pad), "padded.json"), workers=workers)
    assert _canonical(padded) == _canonical(plain)
    if workers == 1:  # the decoder never sees the padding: runs stay within two chunks
        assert watch.largest <= 2 * 4096 + 2
    assert padded.time_unit == "ns"
    assert padded.names[padded.ops.name[0]] == "op   0  spaced"  # spaces in strings are kept


@pytest.mark.usefixtures("tiny_chunks")
def test_string_longer_than_the_buffer_is_kept_whole(write_trace: Callable[..., Path]) -> None:
    name = "k" + " " * 20_000 + 'é\\"' * 3000 + "end"  # escapes cut at every chunk end
    trace = {"traceEvents": [kernel("short", 1.0, 2.0, corr=1), kernel(name, 5.0, 2.0, corr=2)]}
    read = read_trace(write_trace(trace), workers=1)
    assert [read.names[i] for i in read.gpu.name] == ["short", name]


@pytest.mark.usefixtures("tiny_chunks")
@pytest.mark.parametrize("where", ["event", "head", "tail"])
def test_string_over_the_cap_is_refused(
    where: str, monkeypatch: pytest.MonkeyPatch, write_trace: Callable[..., Path]
) -> None:
    monkeypatch.setattr("libreyolo.kineto.source.MAX_STRING_BYTES", 50_000)
    long = "x" * 60_000
    events = [kernel("a", 1.0, 2.0, corr=1), kernel("b", 3.0, 2.0, corr=2)]
    if where == "event":
        events[1]["name"] = long
    doc = {"traceEvents": events}
    if where == "head":
        doc = {"note": long, "traceEvents": events}
    elif where == "tail":
        doc["note"] = long
    text = json.dumps(doc)
    path = write_trace(text)
    with pytest.raises(AnalysisError) as caught:
        read_trace(path, workers=1)
    at = text.index('"' + long[:10])
    assert caught.value.message == (
        f"failed to analyse {path}: a string of more than 50000 bytes at byte {at}"
    )


@pytest.mark.usefixtures("tiny_chunks")
def test_event_over_the_cap_is_refused(
    monkeypatch: pytest.MonkeyPatch, write_trace: Callable[..., Path]
) -> None:
    monkeypatch.setattr("libreyolo.kineto.source.MAX_EVENT_BYTES", 40_000)
    big = kernel("b", 3.0, 2.0, corr=2, parts=["y" * 1000] * 50)
    text = json.dumps({"traceEvents": [kernel("a", 1.0, 2.0, corr=1), big]})
    path = write_trace(text)
    with pytest.raises(AnalysisError) as caught:
        read_trace(path, workers=1)
    at = text.index("}, {") + 3
    assert caught.value.message == (
        f"failed to analyse {path}: an event at byte {at} is more than 40000 bytes "
        "(whitespace aside)"
    )


@pytest.mark.usefixtures("tiny_chunks")
def test_long_value_that_is_no_event_is_refused(write_trace: Callable[..., Path]) -> None:
    path = write_trace('[{"ph": "X"}, "' + "s" * 20_000 + '"]')
    with pytest.raises(AnalysisError) as caught:
        read_trace(path, workers=1)
    assert caught.value.message == (
        f"failed to analyse {path}: not a Chrome trace (the event at byte 14 is no object)"
    )


@pytest.mark.usefixtures("tiny_chunks")
def test_missing_comma_after_a_long_event_is_invalid(write_trace: Callable[..., Path]) -> None:
    long = json.dumps(kernel("k" * 10_000, 1.0, 2.0, corr=1))
    text = "[" + long + " " * 9000 + "{}]"
    with pytest.raises(AnalysisError) as caught:
        read_trace(write_trace(text), workers=1)
    at = len(text) - 3
    assert caught.value.message.endswith(f"invalid JSON at byte {at}: expected ',' or ']'")


def test_trace_past_the_input_limit_stops_there(tmp_path: Path) -> None:
    path = tmp_path / "bomb.json.gz"
    _gzip_bomb(path, b'{"traceEvents": [', 64 << 20)  # 64 MiB of whitespace in 64 kB
    with pytest.raises(AnalysisError) as caught:
        read_trace(path, workers=1, max_input_bytes=8 << 20)
    assert caught.value.message == (
        f"failed to analyse {path}: exceeds the input limit of {8 << 20} bytes"
    )
    assert caught.value.hint == "raise it with --max-input-bytes"


def _gzip_bomb(path: Path, head: bytes, spaces: int, tail: bytes = b"") -> None:
    """A gzip file of `head`, `spaces` bytes of whitespace, `tail`: built block by block."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b" " * (1 << 20)
    with path.open("wb") as out:
        out.write(packer.compress(head))
        for _ in range(spaces >> 20):
            out.write(packer.compress(block))
        out.write(packer.compress(tail) + packer.flush())


# Peak memory of a fresh interpreter (1 MiB chunks, one process, 2 GiB of address space at
# most): VmHWM, the high-water mark of its own memory (ru_maxrss would include the RSS of the
# process that forked it, pytest's, which Linux carries across exec).
_PEAK = """
import re, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
import libreyolo.kineto.source as source
source.CHUNK_BYTES = 1 << 20
from libreyolo.kineto import events as events_module
from libreyolo.kineto.events import read_trace
trace = read_trace(sys.argv[1], workers=1)
status = open("/proc/self/status").read()
print(len(trace), re.search(r"VmHWM:\\s*(\\d+) kB", status).group(1))
"""


def _peak_kb(path: Path) -> tuple[int, int]:
    """(events read, peak memory in kB) of reading `path` in a fresh interpreter."""
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    events, peak_kb = proc.stdout.split()
    return int(events), int(peak_kb)


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux /proc")
@pytest.mark.parametrize("place", ["between", "inside", "tail"])
@pytest.mark.parametrize("compressed", [False, True])
def test_padding_costs_no_memory(place: str, compressed: bool, tmp_path: Path) -> None:
    events = _events(200)
    plain, padded = tmp_path / "plain.json", tmp_path / "padded.json"
    plain.write_text(_text(events, {}))
    pad = " " * (8 << 20)  # 8 MiB runs: two (between) or four (inside one event, tail)
    text = _text(events, {place: pad}).encode()
    assert len(text) < 40 << 20
    if compressed:
        padded = padded.with_suffix(".json.gz")
        text = gzip.compress(text, compresslevel=1)
    padded.write_bytes(text)
    count, base_kb = _peak_kb(plain)
    padded_count, peak_kb = _peak_kb(padded)
    assert padded_count == count == 600
    # A few 1 MiB buffers over the unpadded read (the padding held would be 16-32 MiB, twice).
    assert peak_kb - base_kb < 12 << 10
