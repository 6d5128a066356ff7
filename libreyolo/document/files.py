"""Profile files: sniff, load (any known schema, `.gz`, `-` for stdin) and save atomically.

Loading upgrades in memory and never rewrites the file. Saving writes a temporary file in the
target directory, fsyncs it and renames it into place, so a reader never sees half a file.
Profiles are small, so stdlib `json` decodes them; the typed model (msgspec) is imported only
when a whole document is built, which keeps `get` on a profile.json free of its import cost.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import sys
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from libreyolo.document.migrations import CURRENT, schema_version, upgrade
from libreyolo.document.validate import check_metrics
from libreyolo.errors import AnalysisError, MissingFileError, UsageError

if TYPE_CHECKING:
    from libreyolo.document.model import Profile, Scalar

_SNIFF_BYTES = 1 << 18  # a profile names its schema, and a trace its events, near the top
_PROFILE_TAG = re.compile(rb'"schema"\s*:\s*"libreyolo\.profile')
_TRACE_TAG = re.compile(rb'"traceEvents"\s*:|^\s*\[')
_MAX_PROFILE_BYTES = 256 << 20  # a profile is kilobytes; anything this large is a trace

FileKind = Literal["profile", "trace"]


def check_readable(path: str) -> Path:
    """The path as a Path, or MissingFileError (exit 2) when it is absent or a directory."""
    if path == "-":
        return Path(path)
    target = Path(path)
    if not target.exists():
        raise MissingFileError(f"not found: {path}")
    if target.is_dir():
        raise MissingFileError(
            f"not a file: {path} is a directory", hint="pass profile.json or profile_trace.json"
        )
    return target


def _open_head(path: Path) -> bytes:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            return handle.read(_SNIFF_BYTES)
    except (OSError, EOFError, zlib.error) as err:
        raise AnalysisError(f"failed to analyse {path}: {err}") from err


def sniff(path: str) -> FileKind:
    """Whether `path` holds a libreyolo profile or a Chrome trace, judged from its first bytes."""
    if path == "-":
        return "profile"
    head = _open_head(check_readable(path))
    if not head.strip():
        raise AnalysisError(f"failed to analyse {path}: the file is empty")
    if _PROFILE_TAG.search(head):
        return "profile"
    if _TRACE_TAG.search(head):
        return "trace"
    return "profile"  # decoding reports what it is instead (not JSON, no schema, ...)


def _read_bytes(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    target = check_readable(path)
    if target.stat().st_size > _MAX_PROFILE_BYTES:
        raise AnalysisError(f"failed to analyse {path}: too large for a profile document")
    try:
        data = target.read_bytes()
        return gzip.decompress(data) if target.suffix == ".gz" else data
    except (OSError, EOFError, zlib.error) as err:
        raise AnalysisError(f"failed to analyse {path}: {err}") from err


def read_raw(path: str) -> dict[str, Any]:
    """The JSON object in a profile file, undecoded into the model."""
    data = _read_bytes(path)
    if not data.strip():
        raise AnalysisError(f"failed to analyse {path}: the file is empty")
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError) as err:
        raise AnalysisError(f"failed to analyse {path}: not valid JSON ({err})") from err
    if not isinstance(raw, dict):
        raise AnalysisError(f"failed to analyse {path}: not a libreyolo profile (no schema tag)")
    return raw


def peek_metrics(path: str) -> dict[str, Scalar] | None:
    """The metric map of a current-schema profile without building the document, or None when
    the file needs the full load (an older schema, or no valid metric map to read)."""
    raw = read_raw(path)
    if schema_version(raw, origin=path) != CURRENT:
        return None
    metrics = raw.get("metrics")
    scalars = (str, int, float, bool, type(None))
    if not isinstance(metrics, dict) or not all(isinstance(v, scalars) for v in metrics.values()):
        return None
    return check_metrics(metrics, origin=path)  # NaN, negative times, p50 > p90: exit 1


def load(path: str) -> Profile:
    """Read a profile of any known schema and return it in the current schema."""
    from libreyolo.document.codec import from_builtins

    return from_builtins(upgrade(read_raw(path), origin=path), origin=path)


def save(profile: Profile, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write `profile` atomically (temp file, fsync, rename); `.gz` paths are compressed."""
    from libreyolo.document.codec import to_json_bytes

    target = Path(path)
    if target.exists() and not overwrite:
        raise UsageError(f"refusing to overwrite {target}", hint="choose another path")
    payload = to_json_bytes(profile)
    if target.suffix == ".gz":
        payload = gzip.compress(payload, mtime=0)
    write_atomic(target, payload, overwrite=overwrite)
    return target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(target: Path, payload: bytes, *, overwrite: bool = True) -> None:
    """Put `payload` at `target` so that readers see the old file or the new, never half.

    Without `overwrite`, the file is linked into place, which fails if another writer got there
    first (no check-then-replace race).
    """
    import tempfile  # only writers need it; readers should not pay its import

    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
            os.fchmod(out.fileno(), 0o666 & ~_umask())  # mkstemp makes 0600; keep a normal mode
        if overwrite:
            os.replace(temp_name, target)
        else:
            try:
                os.link(temp_name, target)
            except FileExistsError:
                raise UsageError(
                    f"refusing to overwrite {target}", hint="choose another path"
                ) from None
    finally:
        Path(temp_name).unlink(missing_ok=True)
