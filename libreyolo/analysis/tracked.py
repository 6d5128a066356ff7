"""What one profile (or one unfinished sweep point) is to a tracking server: a run's params,
metrics and tags, and what `profile log` and the sweep callbacks logged.

Role: `profile_run` takes the headline figures `summary --json` shows (img/s, step time,
latency percentiles, MFU) from the profile's metric map and the peak memory in bytes from its
raw memory records; `point_run` is a sweep point that has no profile (failed, interrupted,
missing) with its reason. Params are the overrides the point was made with (`batch=4`), over
the run's recorded facts (mode, model, device, batch, imgsz, amp, exec). Every metric name
carries its unit; MLflow and TensorBoard get the same names.

Must not: read files, talk to a tracking server, or import torch, numpy, Hydra or MLflow.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import ClassVar

from libreyolo.analysis.result_kind import ResultKind
from libreyolo.analysis.stats import as_number
from libreyolo.document.mode import Mode
from libreyolo.document.model import Profile

# (metric name logged, key in the profile's metric map): the names `summary --json` prints.
MAP_METRICS = (
    ("img_per_s", "img_per_s"),
    ("step_ms", "step_ms"),
    ("latency_p50_ms", "latency_p50_ms"),
    ("latency_p90_ms", "latency_p90_ms"),
    ("latency_p99_ms", "latency_p99_ms"),
    ("mfu_frac", "mfu"),  # model FLOPs utilisation against the headline peak, 0..1
)
# MLflow refuses a param key outside these characters (and `+experiment` is an override).
_KEY_CHARS = re.compile(r"[^A-Za-z0-9_\-. /]")
MAX_PARAM_KEY_CHARS = 250  # MLflow's limit on a param's key


@dataclass(frozen=True, slots=True)
class TrackedRun:
    """One run to log: a sweep point or a lone profile."""

    name: str  # the point's folder name, or the profile's folder name
    index: int  # its place in the sweep (0 for a lone profile): TensorBoard's step
    status: str  # "ok" or the sweep's status of a point without a profile
    reason: str | None  # why the point has no profile
    params: dict[str, str]
    metrics: dict[str, float]
    artifacts: tuple[str, ...]  # files to attach (profile, trace, report page)


@dataclass(frozen=True, slots=True)
class LoggedRun:
    name: str
    status: str
    reason: str | None
    mlflow_run_id: str | None
    tensorboard_dir: str | None


@dataclass(frozen=True, slots=True)
class LoggedRuns:
    """What `profile log` (or a sweep callback) wrote, and where."""

    result_kind: ClassVar[ResultKind] = ResultKind.LOGGED
    source: str
    mlflow_uri: str | None
    experiment: str | None
    experiment_id: str | None
    parent_run_id: str | None  # the sweep's run; None for a lone profile
    tensorboard_dir: str | None
    runs: tuple[LoggedRun, ...]


def run_metrics(profile: Profile) -> dict[str, float]:
    """The figures logged for `profile`, only those it holds (`mfu_frac` needs a peak)."""
    found = {name: as_number(profile.metrics.get(key)) for name, key in MAP_METRICS}
    device = profile.device_memory.peak_allocated_bytes if profile.device_memory else None
    host = profile.host_memory.peak_rss_bytes if profile.host_memory else None
    found["peak_vram_bytes"] = None if device is None else float(device)
    found["peak_rss_bytes"] = None if host is None else float(host)
    return {name: value for name, value in found.items() if value is not None}


def param_key(key: str) -> str:
    """An override's key as MLflow takes it: `+experiment` -> `experiment`; characters it
    refuses -> `_`; a key that would resolve to another as a path (`a/../b`, `//`, a leading
    or trailing `/`, a `.` part: MLflow's file store refuses those) made one; over MLflow's
    250 characters cut, with a digest so two long keys stay two."""
    parts = _KEY_CHARS.sub("_", key.lstrip("+~")).split("/")
    name = "/".join("_" * len(part) if part in (".", "..") else part for part in parts if part)
    if len(name) > MAX_PARAM_KEY_CHARS:
        digest = hashlib.sha256(name.encode()).hexdigest()[:12]
        name = f"{name[: MAX_PARAM_KEY_CHARS - 13].rstrip('/')}-{digest}"
    return "_" + name if name.startswith("..") else name or "_"  # `...`: a parent, to MLflow


def run_params(profile: Profile | None, overrides: list[str]) -> dict[str, str]:
    """The run's facts, then the overrides it was made with (typed values win)."""
    params: dict[str, str] = {}
    if profile is not None:
        run = profile.run
        facts = {
            "mode": "infer" if profile.kind is Mode.INFER else "run",  # the config's `mode=`
            "model": run.model,
            "device": run.device,
            "batch": run.batch,
            "imgsz": run.imgsz,
            "amp": run.amp,
            "exec": profile.execution.name if profile.execution else None,
        }
        params = {key: str(value) for key, value in facts.items() if value is not None}
        overrides = overrides or list(run.overrides)
    for text in overrides:
        key, sep, value = text.partition("=")
        if sep:
            params[param_key(key)] = value
    return params


def profile_run(
    profile: Profile, name: str, index: int, overrides: list[str], artifacts: tuple[str, ...]
) -> TrackedRun:
    """The run of a measured point (or a lone profile)."""
    return TrackedRun(
        name=name,
        index=index,
        status="ok",
        reason=None,
        params=run_params(profile, overrides),
        metrics=run_metrics(profile),
        artifacts=artifacts,
    )


def point_run(
    name: str, index: int, status: str, reason: str | None, overrides: list[str]
) -> TrackedRun:
    """The run of a point that left no profile: its status and reason, no metrics."""
    return TrackedRun(name, index, status, reason, run_params(None, overrides), {}, ())
