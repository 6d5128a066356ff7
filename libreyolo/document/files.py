"""Profile files: sniff, load (any known schema, `.gz`, `-` for stdin) and save atomically.

Reading is bounded (see limits.py): only regular files, a profile of at most 64 MiB once
decompressed, and no read past the input limit, so a gzip bomb stops at the cap.

Loading upgrades in memory and never rewrites the file. Saving writes a temporary file in the
target directory, fsyncs it and renames it into place, so a reader never sees half a file.
Profiles are small, so stdlib `json` decodes them; the typed model (msgspec) is imported only
when a whole document is built, which keeps `get` on a profile.json free of its import cost.
"""

from __future__ import annotations

import json
import os
import re
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from libreyolo.document.json_value import JsonObject
from libreyolo.document.limits import (
    MAX_INPUT_BYTES,
    MAX_PROFILE_BYTES,
    check_regular,
    open_regular,
    too_large,
)
from libreyolo.document.migrations import CURRENT, schema_version, upgrade
from libreyolo.document.validate import check_metrics
from libreyolo.errors import AnalysisError, UsageError

if TYPE_CHECKING:
    from libreyolo.document.model import Profile, Scalar

_SNIFF_BYTES = 1 << 18  # a profile names its schema, and a trace its events, near the top
_PROFILE_TAG = re.compile(rb'"schema"\s*:\s*"libreyolo\.profile')
_TRACE_TAG = re.compile(rb'"traceEvents"\s*:|^\s*\[')
_SPACES = re.compile(rb"[ \t\r\n]+")

FileKind = Literal["profile", "trace"]


class _Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


def check_readable(path: str) -> Path:
    """The path as a Path, or MissingFileError (exit 2) when it is absent or not a regular file
    (a folder, device, FIFO or socket: judged by `stat`, before anything is opened)."""
    if path != "-":
        check_regular(path)
    return Path(path)


@contextmanager
def _open_decoded(path: str, limit_bytes: int) -> Iterator[_Readable]:
    """The file's bytes, gunzipped when its name ends in `.gz`."""
    try:
        with open_regular(path, limit_bytes) as raw:
            if not path.endswith(".gz"):
                yield raw
                return
            import gzip  # a plain profile.json is read without it

            yield gzip.GzipFile(fileobj=raw)
    except (OSError, EOFError, zlib.error) as err:
        raise AnalysisError(f"failed to analyse {path}: {err}") from err


def _head(path: str, limit_bytes: int) -> bytes:
    """The file's start with each whitespace run squeezed to one space, so padding cannot push
    the tags out of sight: read until a tag shows or `_SNIFF_BYTES` are kept (at most
    `limit_bytes` read). A profile's tag in the first read returns that read as it is."""
    head = b""
    read = 0
    with _open_decoded(path, limit_bytes) as stream:
        while len(head) < _SNIFF_BYTES and (data := stream.read(_SNIFF_BYTES)):
            read += len(data)
            if read > limit_bytes:
                raise too_large(path, limit_bytes)
            if not head and _PROFILE_TAG.search(data):
                return data  # the tag in sight as written: squeezing could only keep it there
            squeezed = _SPACES.sub(b" ", data)
            head += squeezed
            if squeezed.strip() and (_PROFILE_TAG.search(head) or _TRACE_TAG.search(head)):
                break
    return head


def sniff(path: str, *, max_input_bytes: int = MAX_INPUT_BYTES) -> FileKind:
    """Whether `path` holds a libreyolo profile or a Chrome trace, judged from its first bytes."""
    if path == "-":
        return "profile"
    check_readable(path)
    head = _head(path, max_input_bytes)
    if not head.strip():
        raise AnalysisError(f"failed to analyse {path}: the file is empty")
    if _PROFILE_TAG.search(head):
        return "profile"
    if _TRACE_TAG.search(head):
        return "trace"
    return "profile"  # decoding reports what it is instead (not JSON, no schema, ...)


def _read_bytes(path: str, max_input_bytes: int) -> bytes:
    """The whole (decompressed) file, by a bounded read: at most one byte past the smaller of
    the profile cap and the input limit, so a file over it is refused without being held."""
    limit = min(max_input_bytes, MAX_PROFILE_BYTES)
    if path == "-":
        data = _stdin_bytes(limit + 1)
    elif check_regular(path).st_size > limit:  # refused by its size, before a byte is read
        raise _too_large_profile(path, limit, max_input_bytes)
    else:
        with _open_decoded(path, limit) as stream:
            data = stream.read(limit + 1)
    if len(data) > limit:
        raise _too_large_profile(path, limit, max_input_bytes)
    return data


# What stdin held, read once per stream: `-` may be read by two readers in a row.
_stdin: list[tuple[object, bytes]] = []


def _stdin_bytes(limit_bytes: int) -> bytes:
    """At most `limit_bytes` of stdin, read on the first call and the same bytes after: `get -`
    of an older file peeks at its metric map, then loads the whole document. Keyed by the
    stream, so a new stdin (a test's, a caller's) is read afresh."""
    stream = sys.stdin.buffer
    if not _stdin or _stdin[0][0] is not stream:
        _stdin[:] = [(stream, stream.read(limit_bytes))]
    return _stdin[0][1][:limit_bytes]


def _too_large_profile(path: str, limit_bytes: int, max_input_bytes: int) -> AnalysisError:
    if limit_bytes == max_input_bytes:
        return too_large(path, limit_bytes)
    return AnalysisError(
        f"failed to analyse {path}: more than {MAX_PROFILE_BYTES >> 20} MiB, too large for a "
        "profile document (a profile is kilobytes)"
    )


def read_raw(path: str, *, max_input_bytes: int = MAX_INPUT_BYTES) -> JsonObject:
    """The JSON object in a profile file, undecoded into the model."""
    data = _read_bytes(path, max_input_bytes)
    if not data.strip():
        raise AnalysisError(f"failed to analyse {path}: the file is empty")
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError) as err:
        raise AnalysisError(f"failed to analyse {path}: not valid JSON ({err})") from err
    if not isinstance(raw, dict):
        raise AnalysisError(f"failed to analyse {path}: not a libreyolo profile (no schema tag)")
    return raw


def peek_metrics(path: str, *, max_input_bytes: int = MAX_INPUT_BYTES) -> dict[str, Scalar] | None:
    """The metric map of a current-schema profile without building the document, or None when
    the file needs the full load (an older schema, or no valid metric map to read)."""
    raw = read_raw(path, max_input_bytes=max_input_bytes)
    if schema_version(raw, origin=path) != CURRENT:
        return None
    metrics = raw.get("metrics")
    if not isinstance(metrics, dict):
        return None
    scalars = {k: v for k, v in metrics.items() if isinstance(v, str | int | float | bool | None)}
    if len(scalars) != len(metrics):
        return None
    return check_metrics(scalars, origin=path)  # NaN, negative times, p50 > p90: exit 1


def load(path: str, *, max_input_bytes: int = MAX_INPUT_BYTES) -> Profile:
    """Read a profile of any known schema and return it in the current schema."""
    from libreyolo.document.codec import from_builtins

    raw = read_raw(path, max_input_bytes=max_input_bytes)
    return from_builtins(upgrade(raw, origin=path), origin=path)


def save(profile: Profile, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write `profile` atomically (temp file, fsync, rename); `.gz` paths are compressed."""
    from libreyolo.document.codec import to_json_bytes

    target = Path(path)
    if target.exists() and not overwrite:
        raise UsageError(f"refusing to overwrite {target}", hint="choose another path")
    payload = to_json_bytes(profile)
    if target.suffix == ".gz":
        import gzip

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
