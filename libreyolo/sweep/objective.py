"""What a sweep point returns to Hydra: its img/s as a float, with the point's facts on it.

Role: `sweep_task` returns `point_objective(...)` for every job, so any Hydra sweeper can drive
`libreyolo-sweep`: `float(result)` is the point's img/s (NaN when it has none: it did not fit,
failed or was refused), which Optuna and the like maximise, and the attributes carry what the
`hydra/sweeper=tune` search reads (`tune_run.measured_of`): status, code, folder, settings,
each trial's img/s, latency percentiles, peaks, MFU and energy per image (for an Optuna
objective of the user's own), whether it fits or which bound it hit, whether it was reused.
The values come from the point's `status.json` record and its profile; one the sweep files'
rules refuse (`sweep_model.METRIC`) is left out (None), never passed on. To a sweeper with a
`direction` (Optuna's) a point without img/s returns that direction's worst value instead
(`sweeper_value`).

Must not: measure, write, or hold anything that cannot be pickled (submitit and Ray send the
result back from another process: `__reduce__` rebuilds it from plain values).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from libreyolo.document.json_value import JsonObject, JsonValue
from libreyolo.document.limits import MAX_PROFILE_BYTES
from libreyolo.document.model import Scalar, TensorMemory
from libreyolo.document.sweep_files import inside, read_json
from libreyolo.document.sweep_model import METRIC, PointStatus
from libreyolo.document.tune_model import Bound
from libreyolo.document.world import largest_rank_value

LATENCY_PERCENTILES = (50, 90, 99)  # the profile's latency_p50_ms, latency_p90_ms, latency_p99_ms
# A failed point's code when it is a bound the tune search records, not a failure.
BOUND_OF_CODE: dict[str, Bound] = {"oom": "oom", "over_budget": "over_budget"}
# A point without img/s, to a sweeper optimising in this direction (`sweeper_value`).
WORST = {"maximize": -math.inf, "minimize": math.inf}


class PointObjective(float):
    """A point's img/s (NaN: none) and its facts (module docstring)."""

    __slots__ = (
        "amp",
        "batch",
        "bound",
        "code",
        "contended",
        "energy_j_per_img",
        "fits",
        "imgsz",
        "latency_p50_ms",
        "latency_p90_ms",
        "latency_p99_ms",
        "memory_lines",
        "mfu",
        "peak_rss_mb",
        "peak_vram_mb",
        "point",
        "reason",
        "reused",
        "status",
        "threads",
        "trials_img_per_s",
    )
    status: str
    code: str | None
    reason: str | None
    point: str  # the point's folder, relative to the sweep folder
    batch: int | None
    imgsz: int | None
    amp: bool | None
    threads: int | None
    trials_img_per_s: tuple[float, ...]  # each trial's img/s (one for a single window)
    latency_p50_ms: float | None
    latency_p90_ms: float | None
    latency_p99_ms: float | None
    peak_vram_mb: float | None
    peak_rss_mb: float | None  # the window's peak resident memory
    # Training: the process's peak predicted as a line per phase, (fixed, per image) bytes
    # (`analysis.tensor_memory.process_lines`): the maxfit search's prediction of the largest
    # batch under a budget (empty: no tracked step with probes, or no measured peak).
    memory_lines: tuple[tuple[float, float], ...]
    mfu: float | None  # achieved model FLOP/s over the device's peak (the profile's `mfu`)
    energy_j_per_img: float | None  # the GPU's joules per image (CUDA with NVML only)
    fits: bool  # measured to the end (status ok)
    bound: Bound | None  # why it does not fit: out of memory, or over tune.memory_budget_mb
    reused: bool
    contended: bool  # measured on a busy host (the profile's metrics.contended)

    def __new__(cls, img_per_s: float | None, **facts: Any) -> PointObjective:
        self = super().__new__(cls, math.nan if img_per_s is None else img_per_s)
        for name in cls.__slots__:
            object.__setattr__(self, name, facts.pop(name))
        if facts:
            raise TypeError(f"unknown point facts: {', '.join(sorted(facts))}")
        return self

    @property
    def img_per_s(self) -> float | None:
        """The img/s, None where the float is NaN."""
        return None if math.isnan(self) else float(self)

    def facts(self) -> dict[str, object]:
        """Every attribute but the value, by name."""
        return {name: getattr(self, name) for name in self.__slots__}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.img_per_s, self.facts()))

    def __repr__(self) -> str:
        return f"PointObjective({self.img_per_s!r}, point={self.point!r}, status={self.status!r})"


def _rebuild(img_per_s: float | None, facts: dict[str, object]) -> PointObjective:
    return PointObjective(img_per_s, **facts)


def _metric(value: JsonValue) -> float | None:
    """A metric the sweep files accept (a number 0..1e15), as a float; None otherwise."""
    if type(value) not in (int, float) or METRIC(value, "metric") is not None:
        return None
    assert isinstance(value, int | float)
    return float(value)


def _setting(config: Mapping[str, JsonValue], key: str, kind: type) -> Any:
    value = config.get(key)
    return value if type(value) is kind else None


def _profile(point_dir: Path, record: PointStatus) -> JsonObject:
    """The point's profile as raw JSON ({} when it has none inside its folder)."""
    path = inside(point_dir, record.profile)
    return {} if path is None else read_json(path, MAX_PROFILE_BYTES)


def _trials(profile: JsonObject, img_per_s: float | None) -> tuple[float, ...]:
    """Each trial's img/s (`trials[*].metrics.img_per_s`; a single window: its own)."""
    trials = profile.get("trials")
    if not isinstance(trials, list) or not trials:
        return () if img_per_s is None else (img_per_s,)
    found = []
    for trial in trials:
        metrics = trial.get("metrics") if isinstance(trial, dict) else None
        value = _metric(metrics.get("img_per_s")) if isinstance(metrics, dict) else None
        if value is None:  # a trial without img/s: no test can use the others alone
            return ()
        found.append(value)
    return tuple(found)


def _memory_lines(profile: JsonObject) -> tuple[tuple[float, float], ...]:
    """`memory_lines` from the profile's tracked step and measured peak (none: empty)."""
    from libreyolo.analysis.tensor_memory import process_lines

    try:
        tracked = msgspec.convert(profile.get("tensor_memory"), TensorMemory)
        metrics = msgspec.convert(profile.get("metrics", {}), dict[str, Scalar])
    except msgspec.ValidationError:
        return ()  # no tracked step (null), or one this reader cannot trust
    return tuple(
        (line.fixed_bytes, line.per_image_bytes) for line in process_lines(tracked, metrics)
    )


def _world_trial(img_per_s: float | None) -> tuple[float, ...]:
    """A world's one trial: its global img/s (its `trials` are rank 0's window)."""
    return () if img_per_s is None else (img_per_s,)


def _peak(profile: JsonObject, metrics: JsonObject, key: str, world: bool) -> float | None:
    """The point's peak `key`: a world's largest rank's (a memory budget holds for each)."""
    return _metric(largest_rank_value(profile, key) if world else metrics.get(key))


def point_objective(
    record: PointStatus, point_dir: Path, root: Path, config: Mapping[str, JsonValue]
) -> PointObjective:
    """The objective of the point measured (or kept) into `point_dir` under the sweep folder
    `root`, from its status `record`, its profile and its resolved `config`."""
    profile = _profile(point_dir, record) if record.profile else {}
    raw = profile.get("metrics")
    metrics: JsonObject = raw if isinstance(raw, dict) else {}
    fits = record.status == "ok"
    bound = BOUND_OF_CODE.get(record.code or "") if record.status == "failed" else None
    world = metrics.get("world_size") is not None  # the point is the whole world: its img/s
    img_per_s = _metric(metrics.get("global_img_per_s" if world else "img_per_s"))
    latency = {
        f"latency_p{p}_ms": _metric(metrics.get(f"latency_p{p}_ms")) for p in LATENCY_PERCENTILES
    }
    point = point_dir.relative_to(root).as_posix() if point_dir != root else point_dir.name
    return PointObjective(
        img_per_s if fits else None,
        status=record.status,
        code=record.code or None,
        reason=record.reason or None,
        point=point,
        batch=_setting(config, "batch", int),
        imgsz=_setting(config, "imgsz", int),
        amp=_setting(config, "amp", bool),
        threads=_setting(config, "threads", int),
        trials_img_per_s=_world_trial(img_per_s) if world else _trials(profile, img_per_s),
        **latency,
        peak_vram_mb=_peak(profile, metrics, "peak_vram_mb", world),
        peak_rss_mb=_peak(profile, metrics, "peak_rss_mb", world),
        memory_lines=_memory_lines(profile),
        mfu=_metric(metrics.get("mfu")),
        energy_j_per_img=_metric(metrics.get("energy_j_per_img")),
        fits=fits,
        bound=bound,
        reused=record.reused,
        contended=metrics.get("contended") is True,
    )


def sweeper_value(result: PointObjective, sweeper: Mapping[str, Any]) -> float:
    """What a job returns to the sweeper whose settings (`hydra.sweeper`) are `sweeper`:
    `result`, but a point without img/s under a sweeper with one `direction` (Optuna's) returns
    that direction's worst value. hydra-optuna-sweeper 1.3.0 turns a NaN into a traceback (it
    tells the failed trial with the value, which Optuna refuses) and crashes when no trial
    completed; -inf (maximising) is a completed trial that is never best and that the sampler
    learns to avoid. `result`'s facts stay in the point's `status.json`."""
    direction = sweeper.get("direction")
    name = str(getattr(direction, "name", direction))  # optuna's Direction enum, or its name
    if result.img_per_s is not None or name not in WORST:
        return result
    return WORST[name]
