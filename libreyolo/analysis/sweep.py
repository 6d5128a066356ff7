"""A sweep as data: the recommended point per imgsz, the throughput order, the sweep record
(`sweep.json`) built from the points' rows, the chart series (img/s by batch per (imgsz, amp,
threads, exec mode)), the Pareto front (across every series: modes compete) of a cost
(latency, J/img) against img/s, and whether a sweep measured energy. Pure: the rows come from
`libreyolo.document.sweep_files.collect_points`; `sweep.png` and the sweep page draw from here.

Must not: read or write files, import torch, numpy, Hydra or OmegaConf, or print.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from libreyolo.analysis.result_kind import ResultKind
from libreyolo.document.health_names import SUSPECT
from libreyolo.document.sweep_model import STATUSES, SweepRecord, SweepRow
from libreyolo.document.tune_model import TuneRecord

Points = Mapping[str, SweepRow]  # a sweep record's rows by point name
# (imgsz, amp, threads, exec): exec None for rows written before execution modes
SeriesKey = tuple[int | None, bool | None, int | None, str | None]
Series = dict[SeriesKey, list[tuple[int, float]]]


@dataclass(frozen=True, slots=True)
class SweepView:
    """What `summary <sweep-dir>` shows: the sweep record, as `sweep.json` holds it, and the
    batch search's answer when `hydra/sweeper=tune` chose the points (`tune.json`)."""

    result_kind: ClassVar[ResultKind] = ResultKind.SWEEP
    record: SweepRecord
    tune: TuneRecord | None = None


def _throughput(entry: SweepRow) -> float:
    value = entry.metrics.img_per_s
    return float(value) if value is not None else -1.0


def trusted(entry: SweepRow) -> bool:
    """An ok point whose numbers hold: no memory thrash, not measured on a contended host
    (its img/s would rank the host's load, not the configuration), a sound trace, and a mode
    that agrees with eager fp32 (a faster other model is no answer)."""
    metrics = entry.metrics
    return (
        entry.status == "ok"
        and not metrics.memory_pressure
        and metrics.contended is not True
        and metrics.bound != SUSPECT
        and metrics.agrees is not False
    )


def recommend(points: Points) -> dict[str, str]:
    """Per imgsz: the trusted point with the highest img/s."""
    best: dict[str, str] = {}
    for name, entry in points.items():
        if not trusted(entry):
            continue
        if _throughput(entry) < 0:
            continue
        key = str(entry.imgsz)
        if key not in best or _throughput(entry) > _throughput(points[best[key]]):
            best[key] = name
    return dict(sorted(best.items(), key=lambda kv: _imgsz_order(kv[0])))


def _imgsz_order(key: str) -> int:
    """An imgsz key's place: by size, a key that is no size (`None`) first. `str.isdigit` is
    true of superscripts and other digits `int` refuses, hence ASCII only."""
    return int(key) if key.isascii() and key.isdigit() else 0


def by_throughput(points: Points) -> list[str]:
    """Point names, ok points first, by img/s (highest first)."""
    return sorted(points, key=lambda n: (points[n].status != "ok", -_throughput(points[n])))


def counts(points: Points) -> dict[str, int]:
    """How many points have each status, and how many of the ok ones a resumed sweep reused."""
    tally = {status: 0 for status in STATUSES} | {"reused": 0}
    for entry in points.values():
        tally[entry.status] += 1
        tally["reused"] += entry.status == "ok" and entry.reused is True
    return tally


def sweep_record(root: str, points: Points, chart: str | None = None) -> SweepRecord:
    """The sweep record (what `sweep.json` holds) of the point rows under `root`: `num_points`
    is the whole grid when the sweep planned it, missing points included."""
    tally = counts(points)
    return SweepRecord(
        sweep_dir=root,
        points=dict(points),
        num_points=len(points),
        num_ok=tally["ok"],
        num_reused=tally["reused"],
        num_failed=tally["failed"],
        num_interrupted=tally["interrupted"],
        num_missing=tally["missing"],
        recommended=recommend(points),
        chart=chart,
    )


def series_names(points: Points) -> dict[SeriesKey, list[str]]:
    """(imgsz, amp, threads, exec) -> the names of its ok points with an img/s and a batch,
    sorted by batch (threads None: torch's default, the sweep had no threads axis)."""
    series: dict[SeriesKey, list[str]] = {}
    for name, entry in points.items():
        if entry.status != "ok" or _throughput(entry) < 0 or entry.batch is None:
            continue
        key = (entry.imgsz, entry.amp, entry.threads, entry.exec)
        series.setdefault(key, []).append(name)
    return {
        key: sorted(names, key=lambda n: (points[n].batch or 0, _throughput(points[n]), n))
        for key, names in sorted(series.items(), key=lambda kv: str(kv[0]))
    }


def chart_series(points: Points) -> Series:
    """(imgsz, amp, threads, exec) -> [(batch, img/s)] sorted by batch, from the ok points with a
    number (`series_names`)."""
    return {
        key: [(points[n].batch or 0, _throughput(points[n])) for n in names]
        for key, names in series_names(points).items()
    }


def ranked_only(tune: TuneRecord | None) -> frozenset[str]:
    """The points a tune search measured on its short ranking window only (never again on the
    full one): their img/s ranked a size, and is no full window's to read beside the others."""
    if tune is None:
        return frozenset()
    steps = [step for series in tune.series for step in series.path]
    full = {step.point for step in steps if not step.ranked}
    return frozenset(step.point for step in steps if step.ranked and step.point not in full)


LOG_SPAN = 4  # two doublings: wide enough for a log2 batch axis


def log2_axis(batches: set[int]) -> bool:
    """Whether a log2 batch axis fits: more than one batch, all positive, and every one a power
    of two or the largest at least LOG_SPAN times the smallest (a tune search's refinement, 24
    between 16 and 32, would otherwise turn the axis linear and crowd the small batches)."""
    if len(batches) < 2 or min(batches) <= 0:
        return False
    powers = all(b & (b - 1) == 0 for b in batches)
    return powers or max(batches) >= LOG_SPAN * min(batches)


def shows_exec(points: Points) -> bool:
    """Whether the sweep's views name each point's exec mode: it ran more than one, or any
    but eager (rows from before execution modes have none)."""
    modes = {e.exec for e in points.values() if e.exec is not None}
    return len(modes) > 1 or bool(modes - {"eager"})


def series_label(points: Points, key: SeriesKey) -> str:
    """`imgsz 640, amp on` (`, 2 threads` on a threads axis), led by the exec mode when the
    sweep shows modes (`compile · imgsz 640, amp on`); AMP asked for but never in effect (a
    CPU) says so."""
    imgsz, amp, threads, mode = key
    label = f"imgsz {imgsz}, amp {'on' if amp else 'off'}"
    ran = [
        e.amp_effective
        for e in points.values()
        if e.status == "ok" and (e.imgsz, e.amp) == (imgsz, amp)
    ]
    label += " (no effect)" if amp and ran and not any(ran) else ""
    label = label if threads is None else f"{label}, {threads} threads"
    return f"{mode} · {label}" if mode is not None and shows_exec(points) else label


def latency_metric(points: Points) -> str:
    """The per-point latency the trade-off chart uses: `latency_p50_ms` when an ok point has
    it (inference), else `step_ms` (training: one step is the latency of a batch)."""
    for entry in points.values():
        if entry.status == "ok" and entry.metrics.latency_p50_ms is not None:
            return "latency_p50_ms"
    return "step_ms"


def has_energy(points: Points) -> bool:
    """Whether some point has its energy per image (CUDA with NVML: a CPU sweep never does)."""
    return any(e.metrics.energy_j_per_img is not None for e in points.values())


def pareto_front(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """The names whose (cost, img/s) no other point beats: none has a cost as low and img/s as
    high with one of them strictly better. The cost is the latency (or step time) on the
    trade-off chart, J/img on the energy one. Equal points are all on the front. Sorted by
    cost, then by name."""
    front = [
        name
        for name, (lat, ips) in points.items()
        if not any(
            o_lat <= lat and o_ips >= ips and (o_lat < lat or o_ips > ips)
            for other, (o_lat, o_ips) in points.items()
            if other != name
        )
    ]
    return sorted(front, key=lambda n: (points[n][0], n))
