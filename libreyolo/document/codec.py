"""Profile <-> JSON text. Canonical output (sorted keys, 2-space indent, trailing newline).

No file I/O here (see `files.py`); no rounding either: values are rounded once where measured.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from libreyolo.document.convert import ConversionError, convert, to_plain
from libreyolo.document.json_value import JsonObject
from libreyolo.document.model import Profile
from libreyolo.document.validate import check_document
from libreyolo.errors import AnalysisError


def _check_finite(value: Any, path: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"cannot write {value!r} at {path}: JSON has no NaN or infinity")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_finite(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_finite(item, f"{path}[{index}]")


def to_json_bytes(obj: Any, *, sort_keys: bool = True) -> bytes:
    """Canonical JSON: keys sorted, indent 2, UTF-8, one trailing newline. Same input, same bytes.

    NaN and infinity are refused (msgspec would write them as null, which then fails to load).
    `sort_keys=False` keeps the order of plain dicts, for a document whose order is data (the
    sweep plan's points, in launch order).
    """
    import msgspec  # writers only: readers should not pay for its import

    _check_finite(msgspec.to_builtins(obj), "$")
    encoded = msgspec.json.encode(obj, order="sorted" if sort_keys else None)
    return msgspec.json.format(encoded, indent=2) + b"\n"


def document_bytes(document: object, *, sort_keys: bool = True) -> bytes:
    """The file bytes of a sweep document (`sweep_model.py`): its plain form (`to_plain`, groups
    of unset fields left out) as canonical JSON."""
    return to_json_bytes(to_plain(document), sort_keys=sort_keys)


def to_builtins(profile: Profile) -> JsonObject:
    """The document as plain dicts and lists (for JSON output of whole profiles)."""
    import msgspec

    raw = msgspec.to_builtins(profile, order="sorted")
    assert isinstance(raw, dict)
    return raw


def from_builtins(raw: Mapping[str, object], *, origin: str) -> Profile:
    """Validate a current-schema dict into a Profile; a bad key or type, or a number no
    measurement can produce (NaN, a negative time, p50 above p90), is one error line."""
    try:
        profile = convert(raw, Profile)
    except ConversionError as err:
        raise AnalysisError(
            f"failed to analyse {origin}: invalid profile: {err}",
            hint="the file is not a valid libreyolo.profile/v2 document",
        ) from err
    if profile.kind.noun != profile.run.mode:  # one concept stored twice: the two must agree
        raise AnalysisError(
            f"failed to analyse {origin}: invalid profile: kind {profile.kind.value!r} does not "
            f"match run.mode {profile.run.mode!r}",
            hint="the file is not a valid libreyolo.profile/v2 document",
        )
    check_document(raw, origin=origin)  # well typed; now values no measurement can produce
    return profile
