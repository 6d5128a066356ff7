"""The profiles of a sweep's ok points, read for the sweep's report page.

Role: each ok point's `profile` path from the sweep record, rebased onto where the sweep folder
is now (a copied or moved sweep keeps its pages) and kept inside it (`sweep_files.inside`), is
read as a profile document. A point whose profile cannot be read is reported with the reason,
never dropped in silence. Both `libreyolo profile report <sweep dir>` and `libreyolo-sweep` call
this, so both pages are built from the same files.

Must not: import torch, numpy, Hydra or OmegaConf, or write anything.
"""

from __future__ import annotations

from pathlib import Path

from libreyolo.document.files import load
from libreyolo.document.limits import MAX_PROFILE_BYTES
from libreyolo.document.model import Profile
from libreyolo.document.sweep_files import inside
from libreyolo.document.sweep_model import SweepRecord, SweepRow
from libreyolo.errors import ProfileError


def point_profile_path(root: Path, record: SweepRecord, entry: SweepRow) -> Path | None:
    """Where the profile of the point `entry` of `record` lies in the sweep folder `root` now
    (the recorded path rebased from the recorded sweep folder); None when it leads outside."""
    if entry.profile is None:
        return None
    path = Path(entry.profile)
    if record.sweep_dir is not None and path.is_relative_to(record.sweep_dir):
        path = path.relative_to(record.sweep_dir)
    return inside(root, str(path))


def read_point_profiles(
    root: Path, record: SweepRecord
) -> tuple[dict[str, Profile], dict[str, str]]:
    """(profiles of the ok points by name, reasons for the ok points whose profile is lost)."""
    profiles: dict[str, Profile] = {}
    lost: dict[str, str] = {}
    for name, entry in record.points.items():
        if entry.status != "ok":
            continue
        path = point_profile_path(root, record, entry)
        if path is None:
            lost[name] = f"profile not found inside the sweep folder: {entry.profile}"
            continue
        try:
            profiles[name] = load(str(path), max_input_bytes=MAX_PROFILE_BYTES)
        except ProfileError as err:
            lost[name] = err.message
    return profiles, lost
