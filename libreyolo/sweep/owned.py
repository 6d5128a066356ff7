"""Which files in a sweep folder this tool may replace: only those it wrote.

Role: `refuse_foreign` raises `UsageError` (exit 2) naming the first file a sweep would replace
(`sweep.json`, `sweep.png`, `sweep.html`, `sweep_plan.json`, a point's `point.json`,
`status.json` or `point.log`) that is not ours: a `sweep.json` without the libreyolo sweep
schema, a chart without our PNG mark (nor recorded by our `sweep.json`), a page without our
generator tag, a `point.json` that is no request, a `point.log` in a folder without our
`point.json`. The sweep calls it before the first point; the report writer calls it again
before writing. `refuse_foreign_tune` does the same for the files only a tune search writes
(`tune.json` without the libreyolo tune schema, a `tuned*.yaml` without our header), before its
first point: a grid or a report, which write neither, leaves them alone.

Must not: write or delete anything.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable
from pathlib import Path

from libreyolo.document import sweep_files as files
from libreyolo.document.sweep_io import TUNE_FILE
from libreyolo.document.tune_model import TUNE_SCHEMA
from libreyolo.errors import UsageError
from libreyolo.render.html.ours import is_our_page
from libreyolo.sweep.chart import is_our_chart
from libreyolo.sweep.tuned_config import is_tuned_config, tuned_files

HINT = "move it away, or choose another hydra.sweep.dir"
MAX_WALKED = 10_000  # folders of a sweep folder looked at for links


def _exists(path: Path) -> bool:
    return path.is_symlink() or path.exists()


def foreign_point_file(folder: Path) -> Path | None:
    """The first of `point.json`, `status.json`, `point.log` in `folder` not written by us."""
    request_path, status_path = folder / files.REQUEST_FILE, folder / files.STATUS_FILE
    ours = files.is_request(files.read_json(request_path))
    if _exists(request_path) and not ours:
        return request_path
    if _exists(status_path) and not files.is_status(files.read_json(status_path)):
        return status_path
    if _exists(folder / files.LOG_FILE) and not ours:
        return folder / files.LOG_FILE
    return None


def foreign_file(root: Path, names: Iterable[str] = ()) -> Path | None:
    """The first file under `root` a sweep over point folders `names` would replace but did
    not write; None when there is none."""
    record_path = root / files.SWEEP_FILE
    record = files.read_json(record_path, files.MAX_RECORD_BYTES)
    if _exists(record_path) and not files.is_sweep_record(record):
        return record_path
    chart = root / files.CHART_FILE
    drew = is_our_chart(chart) or record.get("chart") == files.CHART_FILE
    if _exists(chart) and not (chart.is_file() and drew):
        return chart
    page = root / files.PAGE_FILE
    if _exists(page) and not is_our_page(page):
        return page
    plan = root / files.PLAN_FILE
    if _exists(plan) and not files.is_plan(files.read_json(plan)):
        return plan
    for name in names:
        folder = files.inside(root, name)
        found = root / name if folder is None else foreign_point_file(folder)
        if found is not None:
            return found
    return None


def foreign_tune_file(root: Path) -> Path | None:
    """The first of `tune.json` and the `tuned*.yaml` at `root` not written by us."""
    tune = root / TUNE_FILE
    if _exists(tune) and files.read_json(tune, files.MAX_RECORD_BYTES).get("schema") != TUNE_SCHEMA:
        return tune
    return next((path for path in tuned_files(root) if not is_tuned_config(path)), None)


def _refuse(found: Path | None) -> None:
    if found is not None:
        raise UsageError(
            f"refusing to replace {found}: libreyolo-sweep did not write it", hint=HINT
        )


def linked_out(root: Path) -> Path | None:
    """The first folder link under `root` that leads outside it (or nowhere): a point whose
    folder it is would be read and written there, Hydra's own `.hydra` files first. Links
    to files (the `--repeat` aggregate) and folder links that stay inside are fine. At most
    MAX_WALKED folders are looked at: a sweep folder holds points, not a file system."""
    walk = os.walk(root)  # never into a link: followlinks=False
    for folder, subfolders, _ in itertools.islice(walk, MAX_WALKED):
        for name in subfolders:
            path = Path(folder) / name
            if path.is_symlink() and files.inside(root, str(path.relative_to(root))) is None:
                return path
    return None


def refuse_foreign(root: Path, names: Iterable[str] = ()) -> None:
    """`UsageError` naming the first file `foreign_file` finds, or a folder link leading out
    of `root` (`linked_out`)."""
    linked = linked_out(root) if root.is_dir() else None
    if linked is not None:
        raise UsageError(
            f"refusing to sweep through {linked}: a symbolic link to "
            f"{os.path.realpath(linked)}, outside the sweep folder",
            hint="replace it with the folder itself, or choose another hydra.sweep.dir",
        )
    _refuse(foreign_file(root, names))


def refuse_foreign_tune(root: Path) -> None:
    """`UsageError` naming the first file `foreign_tune_file` finds."""
    _refuse(foreign_tune_file(root))
