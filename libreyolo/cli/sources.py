"""Open what a reader was given: a profile (any schema), a Chrome trace analysed on the fly, or
(for `summary`) a sweep folder, with its `tune.json` when a batch search chose its points.

The analyser and the verdict code are imported only when a trace or an older file (v1, or v2
before the efficiency keys) needs them, so `get` on a current profile.json starts fast.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from libreyolo import __version__
from libreyolo.document.files import load, peek_metrics, sniff
from libreyolo.document.limits import MAX_INPUT_BYTES
from libreyolo.errors import UsageError

if TYPE_CHECKING:
    from libreyolo.analysis.sweep import SweepView
    from libreyolo.document.model import Profile, Scalar

# A metric every current profile's map holds (`analysis.world.KEYS`, the newest); a map
# without it is older and is completed on load (`analysis.build.read_older`).
NEWEST_METRIC = "world_size"


def open_profile(path: str, *, max_input_bytes: int = MAX_INPUT_BYTES) -> Profile:
    """The profile at `path`; a Chrome trace is reduced once and turned into a profile. At most
    `max_input_bytes` are read (decompressed)."""
    if sniff(path, max_input_bytes=max_input_bytes) == "profile":
        profile = load(path, max_input_bytes=max_input_bytes)
        if profile.legacy_v1 is None and NEWEST_METRIC in profile.metrics:
            return profile
        from libreyolo.analysis.build import read_older

        return read_older(profile)
    from libreyolo.analysis.build import profile_from_trace
    from libreyolo.kineto import analyse_trace

    analysis = analyse_trace(path, max_input_bytes=max_input_bytes)
    return profile_from_trace(analysis, trace_path=path, created=None, version=__version__)


def rank_profile_path(path: str, rank: int, *, max_input_bytes: int = MAX_INPUT_BYTES) -> str:
    """Where rank `rank`'s profile of the world profile at `path` lies (its folder beside it).
    UsageError for a profile of one process, a rank the world has not, or a world whose
    record names another file than `rank<i>/profile.json`."""
    from libreyolo.document.world import rank_profile

    world = open_profile(path, max_input_bytes=max_input_bytes).world
    if world is None:
        raise UsageError(
            f"{path} is not a multi-process run's profile: --rank has no rank to read",
            hint="leave --rank out, or pass the profile.json of a run with --nproc N",
        )
    record = next((r for r in world.ranks if r.rank == rank), None)
    if record is None:
        raise UsageError(
            f"--rank {rank}: {path} has ranks 0 to {world.world_size - 1}",
            hint=f"give a rank below {world.world_size}",
        )
    if record.profile != rank_profile(rank) or path == "-":
        raise UsageError(
            f"{path}: rank {rank}'s profile cannot be found from it ({record.profile[:80]!r})",
            hint="pass that rank's profile.json itself",
        )
    return os.path.join(os.path.dirname(path), record.profile)


def open_metrics(path: str, *, max_input_bytes: int = MAX_INPUT_BYTES) -> dict[str, Scalar]:
    """The metric map `get` reads: straight from a current profile.json, else via the profile."""
    if sniff(path, max_input_bytes=max_input_bytes) == "profile":
        metrics = peek_metrics(path, max_input_bytes=max_input_bytes)
        if metrics is not None and NEWEST_METRIC in metrics:
            return metrics
        if metrics is not None:  # an older v2 map, completed here: stdin is read only once
            from libreyolo.analysis.build import with_efficiency_keys

            return with_efficiency_keys(metrics)
    return dict(open_profile(path, max_input_bytes=max_input_bytes).metrics)


def open_sweep(path: str) -> SweepView | None:
    """The sweep at `path` when it is a sweep folder (a `sweep.json` or point folders), else
    None: any other path, a folder included, is opened as a profile (and refused as one).
    AnalysisError (exit 1) when its `sweep.json`, `sweep_plan.json` or `tune.json` is a link
    leading outside it (`check_contained`)."""
    if path == "-" or not os.path.isdir(path):
        return None
    from libreyolo.analysis.sweep import SweepView, sweep_record
    from libreyolo.document import sweep_files as files

    root = Path(path).resolve()
    for name in (files.SWEEP_FILE, files.PLAN_FILE, files.TUNE_FILE):
        files.check_contained(root, name)  # a link out would stand for another sweep
    if (root / files.SWEEP_FILE).is_file():
        record = files.read_sweep_record(root / files.SWEEP_FILE)
        return SweepView(record, files.read_tune_record(root / files.TUNE_FILE))
    # A sweep still running (or stopped before its record): its planned grid or point folders.
    points = files.collect_sweep(root)
    if not points:
        return None
    chart = files.CHART_FILE if (root / files.CHART_FILE).is_file() else None
    tune = files.read_tune_record(root / files.TUNE_FILE)
    return SweepView(sweep_record(str(root), points, chart), tune)
