"""A sweep's point folders as the rows of its record: each point's `point.json`, `status.json`
and profile read into its `SweepRow`, and the rows of a whole sweep folder.

Role: `point_entry` builds one point's row; `collect_sweep` reads the planned (else the found)
point folders into the rows of the sweep record, a planned point without a folder being
`missing`. Every value a row takes from a point's files passes the same rules as the files
themselves (`sweep_model.py`): one that does not makes the point `failed` (code `invalid`, the
file and field in its reason) and is not carried into the row. Every path taken from these
files stays inside the sweep folder (symlinks resolved): a point folder or a profile that leads
elsewhere makes that point `failed`, and nothing outside is read. The files themselves, their
names and their typed readers are `sweep_io.py`'s (re-exported here, where the sweep's code has
always found them).

Must not: import torch, numpy, Hydra or OmegaConf (readers run on a laptop), print, or write
(the sweep's writers do that, with `codec.document_bytes`).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from libreyolo.document.convert import convert
from libreyolo.document.json_value import JsonObject, JsonValue
from libreyolo.document.limits import MAX_PROFILE_BYTES, MAX_RECORD_BYTES, MAX_SMALL_BYTES
from libreyolo.document.rules import Count, Fields, field_problem, first_problem
from libreyolo.document.sweep_io import (
    CHART_FILE,
    LOG_FILE,
    MAX_DEPTH,
    PAGE_FILE,
    PLAN_FILE,
    REQUEST_FILE,
    STATUS_FILE,
    SWEEP_FILE,
    TUNE_FILE,
    TUNED_CONFIG,
    as_status,
    check_contained,
    in_file,
    inside,
    is_plan,
    is_request,
    is_status,
    is_sweep_record,
    member,
    parse_object,
    read_json,
    read_plan,
    read_request,
    read_small_bytes,
    read_status,
    read_sweep_record,
    read_tune_record,
)
from libreyolo.document.sweep_model import (
    MAX_PROFILE_INT,
    OVERRIDES,
    PLAN_SCHEMA,
    REQUEST_SCHEMA,
    STATUS_SCHEMA,
    SWEEP_SCHEMA,
    HeadlineMetrics,
    PointRequest,
    PointStatus,
    SweepRow,
)
from libreyolo.document.sweep_validate import POINT_RULES
from libreyolo.document.world import largest_rank_value

__all__ = [  # the file layer, for the sweep's code and the readers
    "CHART_FILE",
    "LOG_FILE",
    "MAX_RECORD_BYTES",
    "MAX_SMALL_BYTES",
    "PAGE_FILE",
    "PLAN_FILE",
    "PLAN_SCHEMA",
    "REQUEST_FILE",
    "REQUEST_SCHEMA",
    "STATUS_FILE",
    "STATUS_SCHEMA",
    "SWEEP_FILE",
    "SWEEP_SCHEMA",
    "TUNED_CONFIG",
    "TUNE_FILE",
    "check_contained",
    "collect_points",
    "collect_sweep",
    "inside",
    "is_plan",
    "is_request",
    "is_status",
    "is_sweep_record",
    "parse_object",
    "point_entry",
    "point_folders",
    "read_json",
    "read_plan",
    "read_request",
    "read_small_bytes",
    "read_status",
    "read_sweep_record",
    "read_tune_record",
]

HEADLINE = tuple(f.name for f in dataclasses.fields(HeadlineMetrics))  # copied from the profile
AXES = ("batch", "imgsz", "amp", "threads")  # copied from point.json's config
_MEMORY_BYTES = Count(0, MAX_PROFILE_INT)
_HEADLINE = Fields(HeadlineMetrics)
NO_STATUS = PointStatus(
    status="failed",
    reason="no status recorded (the point stopped before it finished)",
    code="crashed",
)
MISSING = SweepRow(status="missing", reason="not run yet", code="missing")
OUTSIDE = "outside"  # the code of a point whose files lead outside the sweep folder
INVALID = "invalid"  # the code of a point whose files hold a value no sweep writes


@dataclass(frozen=True, slots=True, kw_only=True)
class _Axes:
    """The swept settings a row copies from `point.json`'s config (checked already)."""

    batch: int | None = None
    imgsz: int | None = None
    amp: bool | None = None
    threads: int | None = None


class _ProfileHead(NamedTuple):
    """What a row takes from its point's profile."""

    metrics: HeadlineMetrics
    verdict: str | None
    amp_effective: bool | None
    device_memory_mb: float | None
    exec: str | None
    compile_s: float | None
    export_s: float | None


def _failed(code: str, reason: str, overrides: list[str] | None = None) -> SweepRow:
    return SweepRow(status="failed", reason=reason, code=code, overrides=overrides or [])


def _outside(what: str, overrides: list[str] | None = None) -> SweepRow:
    return _failed(OUTSIDE, f"{what} outside the sweep folder", overrides)


def _row(
    status: PointStatus, axes: _Axes, overrides: list[str], *, timing: bool = False
) -> SweepRow:
    """A point's row from its status, settings and overrides (its timing only when asked)."""
    row = SweepRow(
        status=status.status,
        reason=status.reason or None,
        code=status.code or None,
        overrides=list(overrides),
        batch=axes.batch,
        imgsz=axes.imgsz,
        amp=axes.amp,
        threads=axes.threads,  # --threads / a threads axis; None: torch's default
        reused=status.reused,
    )
    if not timing:
        return row
    return dataclasses.replace(
        row,
        held_device=status.held_device,
        lease_wait_s=status.lease_wait_s,
        measure_s=status.measure_s,
        window_s=status.window_s,
        point_s=status.point_s,
    )


def _invalid(
    problem: str, axes: _Axes | None = None, overrides: list[str] | None = None
) -> SweepRow:
    """The row of a point whose files hold an unusable value: failed, naming it; the settings
    and overrides are carried only once they passed the rules."""
    found = _failed(INVALID, problem, overrides)
    if axes is None:
        return found
    return dataclasses.replace(
        found, batch=axes.batch, imgsz=axes.imgsz, amp=axes.amp, threads=axes.threads
    )


def _request_problem(request: JsonObject, overrides: JsonValue, where: str) -> str | None:
    """The first unusable value of point.json's config axes, of the overrides (`where` names
    the file they come from), or of point.json's own fields."""
    config = member(request, "config")
    checks = [
        (f"{REQUEST_FILE} config.{k}", config[k], POINT_RULES[k]) for k in AXES if k in config
    ]
    if overrides is not None:
        checks.append((f"{where} overrides", overrides, OVERRIDES))
    problem = first_problem(checks)
    if problem or not isinstance(request.get("config"), dict):  # no request: nothing else read
        return problem
    return field_problem(request, PointRequest, in_file(REQUEST_FILE), skip=("config", "overrides"))


def _within(base: Path, path: Path) -> bool:
    try:
        return path.resolve().is_relative_to(base.resolve())
    except (OSError, ValueError, RuntimeError):  # RuntimeError: a link loop before 3.13
        return False


def point_entry(folder: Path, root: Path | None = None) -> SweepRow:
    """One point's row of the sweep record, read from its folder. The folder and its files must
    lie inside `root` (default: the folder itself) and its profile inside the folder."""
    base = folder if root is None else root
    request_path, status_path = folder / REQUEST_FILE, folder / STATUS_FILE
    for path in (folder, request_path, status_path):
        if not _within(base, path):
            return _outside(path.name if path != folder else "point folder")
    request = read_json(request_path)
    if not request and not status_path.exists():
        return MISSING
    checked = _checked(request, read_json(status_path))
    if isinstance(checked, SweepRow):
        return checked
    status, axes, overrides = checked
    row = _row(status, axes, overrides, timing=True)
    if row.status != "ok":
        return row
    return _with_profile(row, folder, status.profile, axes)


def _checked(
    request: JsonObject, raw_status: JsonObject
) -> tuple[PointStatus, _Axes, list[str]] | SweepRow:
    """A point's status, settings and overrides once its files passed the rules; else its row
    (failed, naming the first unusable value)."""
    overrides: JsonValue = request.get("overrides")
    where = REQUEST_FILE if overrides is not None else STATUS_FILE
    if overrides is None:
        overrides = raw_status.get("overrides")
    problem = _request_problem(request, overrides, where)
    status_problem = None
    status = NO_STATUS
    if raw_status:
        status_problem = field_problem(
            raw_status, PointStatus, in_file(STATUS_FILE), skip=("overrides",)
        )
    if raw_status and not status_problem:
        status = as_status(raw_status) or NO_STATUS
    if problem and not status_problem and status.status != "ok":
        # A request the measurement refused (`batch=-5`): its own reason says why; the row
        # keeps none of the unusable settings.
        return _row(status, _Axes(), [])
    if problem:
        return _invalid(problem)
    config = member(request, "config")
    axes: _Axes = convert({k: config[k] for k in AXES if k in config}, _Axes)
    kept: list[str] = [] if overrides is None else convert(overrides, list[str])
    if status_problem:
        return _invalid(status_problem, axes, kept)
    return status, axes, kept


def _with_profile(row: SweepRow, folder: Path, recorded: str | None, axes: _Axes) -> SweepRow:
    """An ok row with what its profile says, or failed when the profile is lost or unusable."""
    profile_path = inside(folder, recorded)
    if profile_path is None:
        outside = _outside("profile path")
        return dataclasses.replace(
            row, status="failed", reason=outside.reason, code=OUTSIDE, reused=False
        )
    raw = read_json(profile_path, MAX_PROFILE_BYTES)
    metrics = raw.get("metrics")
    if not isinstance(metrics, dict):
        lost = f"profile missing or unreadable: {recorded}"
        return dataclasses.replace(
            row, status="failed", reason=lost, code="no_profile", reused=False
        )
    found = _profile_head(raw, metrics, str(recorded))
    if isinstance(found, str):
        return _invalid(found, axes, row.overrides)
    return dataclasses.replace(
        row,
        metrics=found.metrics,
        verdict=found.verdict,
        amp_effective=found.amp_effective,
        device_memory_mb=found.device_memory_mb,
        exec=found.exec,
        compile_s=found.compile_s,
        export_s=found.export_s,
        profile=str(profile_path),
    )


def _profile_head(raw: JsonObject, metrics: JsonObject, where: str) -> _ProfileHead | str:
    """What a row takes from its point's profile (`where`, relative to the point folder), or
    the first value of those no sweep writes."""
    headline: JsonObject = {k: metrics.get(k) for k in HEADLINE}
    if metrics.get("world_size") is not None:  # a world profile: the point is the whole world
        headline["img_per_s"] = metrics.get("global_img_per_s")
        for key in ("peak_rss_mb", "peak_vram_mb"):  # its largest rank's, as a budget reads it
            headline[key] = largest_rank_value(raw, key)
    verdict = member(raw, "verdict").get("bound") or metrics.get("bound")
    amp = member(raw, "run").get("amp")
    memory = member(raw, "environment").get("device_memory_bytes")
    execution = member(raw, "execution")
    name = execution.get("name")
    compile_s = member(execution, "compiled").get("compile_s")
    export_s = member(execution, "exported").get("export_s")
    problem = first_problem(
        [
            (f"{where} execution.name", name, POINT_RULES["exec"]),
            (f"{where} execution.compiled.compile_s", compile_s, POINT_RULES["compile_s"]),
            (f"{where} execution.exported.export_s", export_s, POINT_RULES["export_s"]),
            (f"{where} metrics", headline, _HEADLINE),
            (f"{where} verdict.bound", verdict, POINT_RULES["verdict"]),
            (f"{where} run.amp", amp, POINT_RULES["amp_effective"]),
            (f"{where} environment.device_memory_bytes", memory, _MEMORY_BYTES),
        ]
    )
    if problem:
        return problem
    return _ProfileHead(
        metrics=convert(headline, HeadlineMetrics),
        verdict=convert(verdict, str | None),
        amp_effective=convert(amp, bool | None),
        device_memory_mb=_memory_mb(convert(memory, int | None)),
        exec=convert(name, str | None),
        compile_s=convert(compile_s, float | int | None),
        export_s=convert(export_s, float | int | None),
    )


def _memory_mb(num_bytes: int | None) -> float | None:
    """Bytes as MB (10**6, as `peak_vram_mb`) to 0.1; None when not a positive count."""
    if num_bytes is None or num_bytes <= 0:
        return None
    return round(num_bytes / 1e6, 1)


def point_folders(root: Path, max_depth: int = MAX_DEPTH) -> list[Path]:
    """The folders under `root` (itself included) that hold a `point.json`, sorted; hidden
    folders (Hydra's `.hydra`) and symlinked folders are not entered."""
    found = []
    base = len(root.parts)
    for here, dirs, files in os.walk(root):
        depth = len(Path(here).parts) - base
        dirs[:] = [] if depth >= max_depth else [d for d in dirs if not d.startswith(".")]
        if REQUEST_FILE in files:
            found.append(Path(here))
    return sorted(found)


def _name(root: Path, folder: Path) -> str:
    return folder.relative_to(root).as_posix() if folder != root else folder.name


def collect_points(root: Path, folders: list[Path]) -> dict[str, SweepRow]:
    """The rows of the sweep record for point `folders` under `root`, keyed by their path
    relative to it."""
    return {_name(root, f): point_entry(f, root) for f in folders}


def collect_sweep(root: Path, only: list[Path] | None = None) -> dict[str, SweepRow]:
    """The rows of the sweep record: the planned points when `root` holds a plan (a planned
    point never started is `missing`, with the plan's overrides), else `only`, else every point
    folder found."""
    plan = read_plan(root)
    if plan is None:
        folders = point_folders(root) if only is None else [Path(f).resolve() for f in only]
        return collect_points(root, folders)
    rows: dict[str, SweepRow] = {}
    for name, overrides in plan.points.items():
        folder = inside(root, name)
        if folder is None:
            rows[name] = _outside("point folder", list(overrides))
            continue
        row = point_entry(folder, root)
        if row.status == "missing":
            row = dataclasses.replace(row, overrides=list(overrides))
        rows[name] = row
    return rows
