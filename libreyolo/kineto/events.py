"""Read a Chrome trace once, streaming, into compact typed columns.

Role: the event side of reading a trace. Each run of events (cut by chunks.py) is decoded by
msgspec into structs that carry only the fields the analysis needs and moved into typed arrays at
once, with names and threads interned; in worker processes a run becomes a part that this process
merges, and so does the second half of a trace read in halves (halves.py), a part at a time.
Categories the analysis never reads (`python_function`, flows, GPU-side annotation copies)
are dropped as soon as a run is decoded. Must not: hold the whole file or one Python object per
event, compute metrics, print, or import torch/numpy.
"""

from __future__ import annotations

import math
import os
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import repeat
from typing import Literal, TypeVar

import msgspec

from libreyolo.document.limits import MAX_INPUT_BYTES
from libreyolo.kineto.chunks import Handlers, read_runs, read_source
from libreyolo.kineto.columns import Columns
from libreyolo.kineto.halves import Emit, FileView, find_cut, read_in_halves
from libreyolo.kineto.source import ByteSource, decode_meta, open_source
from libreyolo.kineto.spool import BLOCK_OPS, CallSpool, OpSpool
from libreyolo.kineto.workers import MIN_CPUS_FOR_POOL, default_workers

# The shared default of a missing `ts`. msgspec hands out this very object, so `in` finds
# events without a timestamp by identity, in C, before any per-event Python work.
_NO_TS = math.nan
_CUDA_DEVICE_TYPE = 1  # `[memory]` events: Device Type 1 is CUDA, 0 the CPU

K = TypeVar("K")
PART_EVENTS = BLOCK_OPS  # events a part of the second half holds (halves.py)
KERNEL, MEMCPY, MEMSET = 0, 1, 2  # `Columns.kind` of GPU activity


class _Args(msgspec.Struct, frozen=True, gc=False):
    correlation: int = -1
    device: int = -1
    allocated: int = msgspec.field(default=-1, name="Total Allocated")
    reserved: int = msgspec.field(default=-1, name="Total Reserved")
    device_type: int = msgspec.field(default=-1, name="Device Type")


_NO_ARGS = _Args()


class Event(msgspec.Struct, gc=False):
    """One trace event, reduced to the fields the analysis reads (unknown keys are skipped)."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float = _NO_TS
    dur: float = 0.0
    args: _Args = _NO_ARGS


class _DeviceProps(msgspec.Struct):
    id: int = -1
    name: str | None = None
    num_sms: int | None = msgspec.field(default=None, name="numSms")
    compute_major: int | None = msgspec.field(default=None, name="computeMajor")


class Meta(msgspec.Struct):
    """Top-level keys besides `traceEvents` that the analysis reads."""

    devices: list[_DeviceProps] = msgspec.field(default_factory=list, name="deviceProperties")
    time_unit: str | None = msgspec.field(default=None, name="displayTimeUnit")


_DECODER = msgspec.json.Decoder(list[Event], strict=False)  # lenient: "5" or 5.0 for an int


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """A GPU listed in `deviceProperties`."""

    name: str | None
    num_sms: int | None
    compute_major: int | None


@dataclass(slots=True)
class MemorySamples:
    """CUDA allocator totals after each allocation or free (`[memory]` instant events)."""

    ts: array[float] = field(default_factory=lambda: array("d"))
    allocated: array[int] = field(default_factory=lambda: array("q"))
    reserved: array[int] = field(default_factory=lambda: array("q"))


@dataclass(slots=True)
class TraceEvents:
    """Everything the analysis needs from one trace, as compact columns."""

    ops: Columns = field(default_factory=Columns)  # cpu_op
    ranges: Columns = field(default_factory=Columns)  # user_annotation (steps, phases, labels)
    calls: Columns = field(default_factory=Columns)  # cuda_runtime and cuda_driver
    gpu: Columns = field(default_factory=Columns)  # kernel, gpu_memcpy, gpu_memset
    memory: MemorySamples = field(default_factory=MemorySamples)  # CUDA `[memory]` samples
    names: list[str] = field(default_factory=list)
    threads: list[tuple[int | str, int | str]] = field(default_factory=list)
    devices: dict[int, DeviceInfo] = field(default_factory=dict)
    time_unit: Literal["us", "ns"] = "us"
    # When set, every cpu_op is here and `ops` holds only the ones the spool keeps in memory.
    spool: OpSpool | None = None
    call_spool: CallSpool | None = None  # when set, every call is here and `calls` is empty

    @property
    def num_ops(self) -> int:
        return len(self.ops) if self.spool is None else self.spool.count

    @property
    def num_calls(self) -> int:
        return len(self.calls) if self.call_spool is None else self.call_spool.count

    def call_blocks(self) -> Iterator[Columns]:
        """Every call, in blocks in file order (the spool's, or `calls` as one)."""
        if self.call_spool is None:
            yield self.calls
        else:
            yield from self.call_spool.blocks()

    def close(self) -> None:
        """Delete the spools' files."""
        for spool in (self.spool, self.call_spool):
            if spool is not None:
                spool.close()

    def __len__(self) -> int:
        """Complete events kept (CPU ops, annotations, runtime calls and GPU activity)."""
        return self.num_ops + len(self.ranges) + self.num_calls + len(self.gpu)


class _Builder:
    """Moves decoded runs of events into `TraceEvents`, interning names and threads.

    Fields are pulled out with list comprehensions (the fastest attribute access on structs) and
    appended to arrays a whole group at a time.
    """

    def __init__(self, spool: OpSpool | None = None, call_spool: CallSpool | None = None) -> None:
        self.events = TraceEvents(spool=spool, call_spool=call_spool)
        self._names: dict[str, int] = {}
        self._threads: dict[tuple[int | str, int | str], int] = {}

    @classmethod
    def for_spooling(
        cls, spool_ops: tuple[Callable[[str], bool], Callable[[str], bool]] | None
    ) -> _Builder:
        """A builder that spools ops and calls when `spool_ops` (keep, mark) is given."""
        if spool_ops is None:
            return cls()
        return cls(OpSpool(*spool_ops), CallSpool())

    def add(self, batch: list[Event]) -> None:
        complete: defaultdict[str, list[Event]] = defaultdict(list)
        memory: list[Event] = []
        for event in batch:
            if event.ph == "X":
                complete[event.cat].append(event)
            elif event.name == "[memory]":
                memory.append(event)
        events = self.events
        self._cpu(self._ops(), complete.get("cpu_op"))
        self._cpu(events.ranges, complete.get("user_annotation"))
        self._cpu(self._calls(), complete.get("cuda_runtime"), with_corr=True)
        self._cpu(self._calls(), complete.get("cuda_driver"), with_corr=True)
        self._gpu(complete.get("kernel"), KERNEL)
        self._gpu(complete.get("gpu_memcpy"), MEMCPY)
        self._gpu(complete.get("gpu_memset"), MEMSET)
        if memory:
            self._memory(memory)
        self._spill()

    def _ops(self) -> Columns:
        """Where cpu_ops go: the spool's block, or the ops columns."""
        spool = self.events.spool
        return self.events.ops if spool is None else spool.block

    def _calls(self) -> Columns:
        """Where calls go: the call spool's block, or the calls columns."""
        spool = self.events.call_spool
        return self.events.calls if spool is None else spool.block

    def _spill(self, *, full_only: bool = True) -> None:
        if self.events.spool is not None:
            self.events.spool.flush(list(self._names), full_only=full_only)
        if self.events.call_spool is not None:
            self.events.call_spool.flush(full_only=full_only)

    def _cpu(self, columns: Columns, group: list[Event] | None, with_corr: bool = False) -> None:
        if not group:
            return
        group = self._common(columns, group)
        columns.thread.fromlist(self._thread_ids(group))
        if with_corr:
            columns.corr.fromlist([event.args.correlation for event in group])

    def _thread_ids(self, group: list[Event]) -> list[int]:
        pids = {event.pid for event in group}
        if len(pids) == 1:  # the usual case: key by tid alone, no tuple per event
            pid = pids.pop()
            tids = [event.tid for event in group]
            by_tid = {
                tid: self._threads.setdefault((pid, tid), len(self._threads)) for tid in set(tids)
            }
            return [by_tid[tid] for tid in tids]
        threads = [(event.pid, event.tid) for event in group]
        table = self._intern(self._threads, threads)
        return [table[thread] for thread in threads]

    def _gpu(self, group: list[Event] | None, kind: int) -> None:
        if not group:
            return
        columns = self.events.gpu
        group = self._common(columns, group)
        columns.corr.fromlist([event.args.correlation for event in group])
        columns.device.fromlist([event.args.device for event in group])
        columns.kind.extend(repeat(kind, len(group)))

    def _common(self, columns: Columns, group: list[Event]) -> list[Event]:
        """Append ts, dur and name; return the group without events that lack `ts`."""
        ts = [event.ts for event in group]
        if _NO_TS in ts:  # found by identity with the shared default, see _NO_TS
            group = [event for event in group if event.ts is not _NO_TS]
            ts = [event.ts for event in group]
        columns.ts.fromlist(ts)  # fromlist: twice as fast as extend for a list
        columns.dur.fromlist([event.dur for event in group])
        names = [event.name for event in group]
        table = self._intern(self._names, names)
        columns.name.fromlist([table[name] for name in names])
        columns.present.update(table[name] for name in set(names))
        return group

    def _memory(self, group: list[Event]) -> None:
        samples = self.events.memory
        for event in group:
            args = event.args
            cuda = args.device_type == _CUDA_DEVICE_TYPE and args.allocated >= 0
            if cuda and event.ts is not _NO_TS:
                samples.ts.append(event.ts)
                samples.allocated.append(args.allocated)
                samples.reserved.append(args.reserved)

    @staticmethod
    def _intern(table: dict[K, int], keys: list[K]) -> dict[K, int]:
        """Give new keys the next ids; the table then maps every key."""
        for key in set(keys).difference(table):
            table[key] = len(table)
        return table

    def merge(self, part: TraceEvents) -> None:
        """Append a part built in a worker, mapping its name and thread ids to ours."""
        names = self._intern(self._names, part.names)
        name_id = [names[name] for name in part.names].__getitem__
        threads = self._intern(self._threads, part.threads)
        thread_id = [threads[thread] for thread in part.threads].__getitem__
        events = self.events
        for mine, theirs in (
            (self._ops(), part.ops),
            (events.ranges, part.ranges),
            (self._calls(), part.calls),
            (events.gpu, part.gpu),
        ):
            mine.ts.extend(theirs.ts)
            mine.dur.extend(theirs.dur)
            mine.name.fromlist(list(map(name_id, theirs.name)))  # map: no bytecode per event
            mine.present.update(map(name_id, theirs.present))
            mine.thread.fromlist(list(map(thread_id, theirs.thread)))
            mine.corr.extend(theirs.corr)
            mine.device.extend(theirs.device)
            mine.kind.extend(theirs.kind)
        events.memory.ts.extend(part.memory.ts)
        events.memory.allocated.extend(part.memory.allocated)
        events.memory.reserved.extend(part.memory.reserved)
        self._spill()

    def part(self) -> TraceEvents:
        """The columns built so far, with their name and thread tables."""
        events = self.events
        events.names = list(self._names)
        events.threads = list(self._threads)
        return events

    def finish(self, meta: Meta) -> TraceEvents:
        self._spill(full_only=False)
        events = self.part()
        if events.spool is not None:
            events.ops = events.spool.kept
        # Chrome traces always give ts/dur in µs; `displayTimeUnit: "ns"` only says the values
        # carry sub-µs fractions (the V100 fixture: ts 1712195495519689.0 is 2024 in µs).
        events.time_unit = "ns" if meta.time_unit == "ns" else "us"
        events.devices = {
            props.id: DeviceInfo(props.name, props.num_sms, props.compute_major)
            for props in meta.devices
        }
        return events


def _work(text: bytes) -> TraceEvents | None:
    """In a worker process: one run of events (JSON array text) as a part; None if it does not
    decode, which tells the reader its cut was false."""
    try:
        events = _DECODER.decode(text)
    except msgspec.DecodeError:
        return None
    builder = _Builder()
    builder.add(events)
    return builder.part()


def read_trace(
    path: str | os.PathLike[str],
    *,
    workers: int | None = None,
    max_input_bytes: int = MAX_INPUT_BYTES,
    spool_ops: tuple[Callable[[str], bool], Callable[[str], bool]] | None = None,
) -> TraceEvents:
    """Read a Chrome trace (`.json` or `.json.gz`) into columns, in one streaming pass.

    `workers` is the number of processes that read a large trace (None: `default_workers()`):
    1 this one alone; 2 a plain trace in two halves at once (halves.py; gzip alone); 3 or more a
    pool that decodes its runs (workers.py). At most `max_input_bytes` are read (decompressed).
    With `spool_ops` = (keep, mark), cpu_ops go to an `OpSpool` on disk: only those `keep` names
    stay in `ops`, and the spool lists the threads of those `mark` names; the calls go to a
    `CallSpool` (the caller closes both: `TraceEvents.close`).

    Raises:
        MissingFileError: the path does not exist or is not a regular file.
        AnalysisError: the file is empty, not JSON, truncated, not a Chrome trace, or over a
            limit (the input, one string or one event).
    """
    count = default_workers() if workers is None else max(workers, 1)
    if 1 < count < MIN_CPUS_FOR_POOL:
        halves = _read_in_halves(path, max_input_bytes, spool_ops)
        if halves is not None:
            return halves
        count = 1  # gzip, small, or a half failed: one process reads it (and says what failed)
    builder = _Builder.for_spooling(spool_ops)
    handlers = Handlers(_DECODER.decode, builder.add, _work, builder.merge)
    try:
        meta = read_runs(path, Meta, handlers, count, max_input_bytes=max_input_bytes)
    except BaseException:
        builder.events.close()
        raise
    return builder.finish(meta)


def _read_in_halves(
    path: str | os.PathLike[str],
    max_input_bytes: int,
    spool_ops: tuple[Callable[[str], bool], Callable[[str], bool]] | None,
) -> TraceEvents | None:
    """`read_trace` with this process reading the first half and a child the second; None
    when the trace cannot be cut or a half failed."""
    with open_source(path, max_input_bytes=max_input_bytes) as source:
        cut = find_cut(source)
        if cut is None:
            return None
        builder = _Builder.for_spooling(spool_ops)
        try:
            meta = read_in_halves(
                cut,
                partial(_read_first, builder, source),
                partial(_read_second, source),
                builder.merge,
            )
        except BaseException:
            builder.events.close()
            raise
        if meta is None:
            builder.events.close()
            return None
        return builder.finish(meta)


def _view_source(view: FileView, like: ByteSource) -> ByteSource:
    return ByteSource(view, like.label, max_input_bytes=like.max_input_bytes)


def _read_first(builder: _Builder, like: ByteSource, view: FileView) -> bytes:
    """Here: the first half into `builder`; the text after its event array."""
    handlers = Handlers(_DECODER.decode, builder.add, _work, builder.merge)
    return read_source(_view_source(view, like), handlers, 1)[1]


def _read_second(like: ByteSource, view: FileView, emit: Emit) -> Meta:
    """In the child: the second half as parts, emitted in order; the trace's metadata (the
    view holds the file's head and its end)."""
    writer = _PartWriter(emit)
    source = _view_source(view, like)
    head, tail = read_source(source, Handlers(_DECODER.decode, writer.add, _work, writer.merge), 1)
    writer.flush()
    return decode_meta(source, head, tail, Meta)


class _PartWriter:
    """Events as parts of about PART_EVENTS events each, emitted in file order (the child's
    memory stays one part whatever the half's size)."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.builder = _Builder()

    def add(self, batch: list[Event]) -> None:
        self.builder.add(batch)
        if len(self.builder.events) >= PART_EVENTS:
            self.flush()

    def merge(self, part: TraceEvents) -> None:
        self.flush()
        self.emit(part)

    def flush(self) -> None:
        self.emit(self.builder.part())
        self.builder = _Builder()
