"""What a `profile.json` or a sweep folder holds, as the runs to log.

Role: a profile file is one run named after its folder; a sweep folder (its `sweep.json`, else
its planned grid or point folders, as `summary <sweep dir>` reads it) is one run per point, in
the record's order, each ok point with its profile, trace and report page as artifacts, and
the sweep's own files (`sweep.json`, `tune.json`, `sweep.html`) for the parent run.

Must not: write anything, or import torch, numpy, Hydra or a tracking library.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from libreyolo.analysis.build import read_older
from libreyolo.analysis.sweep import sweep_record
from libreyolo.analysis.tracked import TrackedRun, point_run, profile_run
from libreyolo.document import sweep_files as files
from libreyolo.document.files import load, sniff
from libreyolo.document.limits import MAX_PROFILE_BYTES
from libreyolo.document.model import Profile
from libreyolo.document.point_profiles import point_profile_path
from libreyolo.document.sweep_model import SweepRecord
from libreyolo.errors import ProfileError, UsageError

PROFILE_NAME = "profile.json"
TRACE_NAMES = ("profile_trace.json", "profile_trace.json.gz")
REPORT_NAME = "report.html"
SWEEP_ARTIFACTS = (files.SWEEP_FILE, files.TUNE_FILE, files.PAGE_FILE)


@dataclass(frozen=True, slots=True)
class Source:
    """The runs of one input; `sweep_name` and `sweep_artifacts` only for a sweep folder."""

    runs: tuple[TrackedRun, ...]
    sweep_name: str | None
    sweep_artifacts: tuple[str, ...]


def read_source(path: str) -> Source:
    """The runs of the profile or sweep folder at `path` (MissingFileError when absent)."""
    if path == "-":
        raise UsageError("log reads a file, not stdin: the profile itself is logged as a file")
    if os.path.isdir(path):
        return _sweep(Path(path).resolve())
    if sniff(path) != "profile":  # MissingFileError (exit 2) when there is no such file
        raise UsageError(
            f"{path} is a trace, not a profile.json",
            hint="log the profile.json written beside it",
        )
    profile = _profile(Path(path))
    name = _run_name(Path(path).resolve())
    run = profile_run(profile, name, 0, [], _artifacts(Path(path)))
    return Source((run,), None, ())


def _run_name(path: Path) -> str:
    """`runs/profile/infer/profile.json` is `infer`; `infer_b1.profile.json` is `infer_b1`."""
    if path.name == PROFILE_NAME:
        return path.parent.name
    return path.name.removesuffix(".json").removesuffix(".profile")


def _profile(path: Path) -> Profile:
    profile = load(str(path), max_input_bytes=MAX_PROFILE_BYTES)
    return read_older(profile) if profile.legacy_v1 is not None else profile


def _artifacts(profile_path: Path) -> tuple[str, ...]:
    """The profile and, beside it, its trace and its report page where they exist."""
    folder = profile_path.parent
    near = [folder / name for name in (*TRACE_NAMES, REPORT_NAME)]
    return (str(profile_path), *(str(p) for p in near if _plain_file(p)))


def _plain_file(path: Path) -> bool:
    """A regular file that is no link: a link in a folder someone handed over could send any
    file of this machine to the tracking server."""
    return path.is_file() and not path.is_symlink()


def _record(root: Path) -> SweepRecord:
    for name in (files.SWEEP_FILE, files.PLAN_FILE):
        files.check_contained(root, name)  # a link out would stand for another sweep
    if (root / files.SWEEP_FILE).is_file():
        return files.read_sweep_record(root / files.SWEEP_FILE)
    points = files.collect_sweep(root)
    if not points:
        raise UsageError(
            f"{root} is neither a profile nor a sweep folder",
            hint="give a profile.json or a folder libreyolo-sweep wrote",
        )
    return sweep_record(str(root), points)


def _sweep(root: Path) -> Source:
    record = _record(root)
    runs = [_point(root, record, index, name) for index, name in enumerate(record.points)]
    found = tuple(str(root / name) for name in SWEEP_ARTIFACTS if _plain_file(root / name))
    return Source(tuple(runs), root.name, found)


def _point(root: Path, record: SweepRecord, index: int, name: str) -> TrackedRun:
    """One point's run; an ok point whose profile is lost is logged failed, with the reason."""
    row = record.points[name]
    if row.status != "ok":
        return point_run(name, index, row.status, row.reason, row.overrides)
    path = point_profile_path(root, record, row)
    if path is None:
        reason = f"profile not found inside the sweep folder: {row.profile}"
        return point_run(name, index, "failed", reason, row.overrides)
    try:
        profile = _profile(path)
    except ProfileError as err:
        return point_run(name, index, "failed", err.message, row.overrides)
    return profile_run(profile, name, index, row.overrides, _artifacts(path))
