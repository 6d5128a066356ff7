"""`libreyolo profile report`: pick the page for the inputs, build it, write it atomically.

One profile (any file the readers take) gives a profile page, two a comparison page, a sweep
folder a sweep page. The default destination is `report.html` next to the first input
(`sweep.html` inside a sweep folder); an existing file there is replaced only when this command
wrote it (its generator tag), while a regular file given with `-o` is the user's choice and is
replaced. Either way the destination must be a regular file or a new path, and none of the
page's inputs (`document.destination`): for a sweep, its record files and each point's files.
The destination's folder is opened when it is checked and the page renamed into that folder,
refused if the path changed meanwhile (`document.destination_write`).

Must not: import torch, numpy or Hydra (a reader), leave a half-written page, or write through
a symbolic link.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from libreyolo.cli.sources import open_profile, open_sweep
from libreyolo.document import sweep_files
from libreyolo.document.destination_write import Destination, open_destination
from libreyolo.errors import UsageError
from libreyolo.render.html.ours import is_our_page
from libreyolo.render.html.written import ReportWritten

if TYPE_CHECKING:
    from libreyolo.analysis.sweep import SweepView
    from libreyolo.document.sweep_model import SweepRecord

PROFILE_PAGE = "report.html"
HINT = "choose another path with -o FILE"


def _default_output(first: str, sweep: bool) -> Path:
    if sweep:
        return Path(first) / sweep_files.PAGE_FILE
    base = Path() if first == "-" else Path(first).parent  # stdin: the working folder
    return base / PROFILE_PAGE


def _destination(output: str | None, first: str, sweep: bool, inputs: list[Path]) -> Destination:
    """Where the page goes, opened: a regular file that is none of `inputs` (replaced: by
    default only when it is our page), or a new path; UsageError (exit 2) before anything is
    written."""
    path = output if output is not None else str(_default_output(first, sweep))
    target = open_destination(path, inputs, what="the report", hint=HINT)
    if output is None and target.file_id is not None and not is_our_page(target.path):
        target.close()
        raise UsageError(
            f"refusing to replace {target.path}: libreyolo profile report did not write it",
            hint=HINT,
        )
    return target


def _write(target: Destination, page: str) -> int:
    # a lone surrogate (a `\ud800` escape in a JSON name) has no UTF-8 form: shown as escaped
    payload = page.encode("utf-8", "backslashreplace")
    target.write(payload)
    return len(payload)


def write_report(inputs: list[str], output: str | None, *, max_input_bytes: int) -> ReportWritten:
    """Build the page `inputs` call for and write it; the written page's description."""
    if len(inputs) > 2:
        raise UsageError(
            f"report takes one input, or two to compare; got {len(inputs)}",
            hint="libreyolo profile report before.json after.json",
        )
    sweeps = [open_sweep(path) for path in inputs]
    if any(s is not None for s in sweeps):
        if len(inputs) != 1 or sweeps[0] is None:
            raise UsageError(
                "a sweep page takes one sweep folder",
                hint="compare two sweeps with: libreyolo profile compare <sweep> <sweep>",
            )
        return _sweep(inputs[0], sweeps[0], output)
    files = [Path(path) for path in inputs if path != "-"]  # stdin is no file to keep
    with _destination(output, inputs[0], sweep=False, inputs=files) as target:
        page = _profile_page(inputs, max_input_bytes)
        kind = "profile" if len(inputs) == 1 else "compare"
        return ReportWritten(str(target.path), kind, _write(target, page), tuple(inputs))


def _profile_page(inputs: list[str], max_input_bytes: int) -> str:
    """The page of one profile, or the comparison of two."""
    from libreyolo.analysis.report import compare_report, profile_report

    if len(inputs) == 1:
        from libreyolo.render.html.profile_page import profile_page

        profile = open_profile(inputs[0], max_input_bytes=max_input_bytes)
        return profile_page(profile_report(profile, inputs[0]))
    from libreyolo.render.html.compare_page import compare_page

    before = open_profile(inputs[0], max_input_bytes=max_input_bytes)
    after = open_profile(inputs[1], max_input_bytes=max_input_bytes)
    return compare_page(compare_report(before, after, (inputs[0], inputs[1])))


def _sweep(folder: str, view: SweepView, output: str | None) -> ReportWritten:
    from libreyolo.analysis.report import sweep_report
    from libreyolo.document.point_profiles import read_point_profiles
    from libreyolo.render.html.sweep_page import sweep_page

    root = Path(os.path.realpath(folder))
    record = view.record
    inputs = _sweep_inputs(root, record, view)
    with _destination(output, folder, sweep=True, inputs=inputs) as target:
        profiles, lost = read_point_profiles(root, record)
        report = sweep_report(record, folder, profiles, lost, view.tune)
        size = _write(target, sweep_page(report))
    written = str(target.path)
    return ReportWritten(written, "sweep", size, (folder,), num_points=len(record.points))


def _sweep_inputs(root: Path, record: SweepRecord, view: SweepView) -> list[Path]:
    """The files of the sweep at `root` a page must never replace: the record, the plan, the
    chart, the search's record and the config files it names, and each point's request, status
    and the profile the page reads."""
    from libreyolo.document.point_profiles import point_profile_path

    found = [root / name for name in (sweep_files.SWEEP_FILE, sweep_files.PLAN_FILE)]
    found.append(root / sweep_files.CHART_FILE)  # the record names it; the page does not read it
    found += [root / sweep_files.TUNE_FILE, root / sweep_files.TUNED_CONFIG]
    for rec in [] if view.tune is None else view.tune.recommended:
        config = sweep_files.inside(root, rec.config_file)
        found += [] if config is None else [config]
    for name, entry in record.points.items():
        point = sweep_files.inside(root, name)
        if point is not None:
            found += [point / sweep_files.REQUEST_FILE, point / sweep_files.STATUS_FILE]
        profile = point_profile_path(root, record, entry)
        if profile is not None:
            found.append(profile)
    return found
