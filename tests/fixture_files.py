"""The fixtures checked in under tests/fixtures, handed to tests as real paths.

Members that compress well are stored as `<name>.xz` (stdlib lzma). `fixture_dir` returns a folder
in which each such member is decompressed under its own name, beside the other members, because
tests rely on neighbours (a checkpoint's expected outputs sit next to it). A folder with nothing
compressed is returned as it is. Decompressed folders live in a cache under the system temporary
directory, keyed by a digest of the stored bytes, so a machine decompresses each version once;
each is published with one rename, so parallel sessions and subprocesses never see a half-written
file, and its files are read-only, as fixtures are.

Must not: skip a test (the fixtures are part of the repository, so a missing one is a failure),
write inside tests/fixtures, or import torch or numpy (the tests that run readers without the
heavy modules use it).
"""

from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
COMPRESSED = ".xz"
# The checkpoints libreyolo 1.6.0 wrote; most measuring tests use the YOLOv9-t one as "a real
# weights file", so they measure a checkpoint users actually have rather than one made here.
YOLO9T = "libreyolo_v1_checkpoints/LibreYOLO9t_nc80_seed0.pt"
YOLOX_N = "libreyolo_v1_yolox/LibreYOLOXn_nc80_seed0.pt"
# A `last.pt` 1.6.0's own trainer wrote: its `config` holds the training keys it ran with.
YOLOX_N_TRAINED = "libreyolo_v1_trained/LibreYOLOXn_trained_by_1.6.0.pt"
_CHUNK_BYTES = 1 << 20


def fixture_file(relative: str) -> Path:
    """The file `<folder>/<name>` of tests/fixtures (decompressed when stored as `.xz`)."""
    folder, _, name = relative.rpartition("/")
    path = fixture_dir(folder) / name
    if not path.is_file():
        raise FileNotFoundError(f"test fixture {relative} is not in {FIXTURES / folder}")
    return path


@cache
def fixture_dir(name: str) -> Path:
    """The folder tests/fixtures/<name>, with every `.xz` member decompressed beside the rest."""
    source = FIXTURES / name
    if not source.is_dir():
        raise FileNotFoundError(f"test fixture folder {name} is not in {FIXTURES}")
    members = sorted(path for path in source.iterdir() if path.is_file())
    if not any(member.name.endswith(COMPRESSED) for member in members):
        return source
    version = _cache_root() / _digest(members)
    if not (version / name).is_dir():
        _publish(members, version, name)
    return version / name


def _cache_root() -> Path:
    # One folder per user: another user's cache in a shared /tmp would not be writable.
    user = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"libreyolo-test-fixtures-{user}"


def _digest(members: list[Path]) -> str:
    """A digest of the members' names and bytes: a changed fixture gets a fresh cache folder."""
    digest = hashlib.sha256()
    for member in members:
        digest.update(member.name.encode() + b"\0")
        with member.open("rb") as stream:
            while chunk := stream.read(_CHUNK_BYTES):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _publish(members: list[Path], version: Path, name: str) -> None:
    """Fill a staging folder, then rename it to `version` in one step."""
    version.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=version.parent))
    try:
        folder = staging / name
        folder.mkdir(parents=True)
        for member in members:
            _materialise(member, folder)
        try:
            os.rename(staging, version)
        except OSError:
            # Another process published the same bytes first (a rename onto a non-empty folder
            # fails): its copy is as good as ours.
            if not (version / name).is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _materialise(member: Path, folder: Path) -> None:
    if member.name.endswith(COMPRESSED):
        target = folder / member.name.removesuffix(COMPRESSED)
        with lzma.open(member) as source, target.open("wb") as sink:
            shutil.copyfileobj(source, sink, _CHUNK_BYTES)
    else:
        target = folder / member.name
        shutil.copyfile(member, target)
    target.chmod(0o444)
