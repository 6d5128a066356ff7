"""Turn a `--weights` argument into a file on disk, or an honest decision to use random weights.

Order: (1) an existing path; (2) a known published name (`LibreYOLO9t.pt`, `LibreYOLOXs.pt`,
...) found in
`./weights/` (where libreyolo 1.6.0 keeps downloads) or in the cache directory; (3) a download of
that name into the cache, atomically; (4) for a known name only, random initialisation with a loud
warning. Anything else is an exit-2 error. Family and size here come from the file NAME only and are
fallbacks: the checkpoint loader reads the real metadata. This module must not import torch, load
checkpoints, print or exit; it only finds files (stdlib urllib for the one network call).
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.client import HTTPException
from pathlib import Path
from typing import Literal

from libreyolo.errors import MissingFileError, UsageError

WEIGHTS_DIR_ENV = "LIBREYOLO_WEIGHTS_DIR"
WEIGHTS_URL_ENV = "LIBREYOLO_WEIGHTS_URL"
DEFAULT_WEIGHTS_DIR = Path("~/.cache/libreyolo/weights")
# 1.6.0's download pattern (one Hugging Face repo per published file): {stem} LibreYOLO9t, {name}
# LibreYOLO9t.pt.
DEFAULT_WEIGHTS_URL = "https://huggingface.co/LibreYOLO/{stem}/resolve/main/{name}"
DOWNLOAD_TIMEOUT_S = 30.0  # per socket operation, not for the whole transfer
# The published file names per family: prefix and size letters (1.6.0's weights hub).
PUBLISHED: dict[str, tuple[str, str]] = {
    "yolo9": ("LibreYOLO9", "tsmc"),
    "yolox": ("LibreYOLOX", "ntsmlx"),
}
SIZES: tuple[str, ...] = tuple(PUBLISHED["yolo9"][1])
KNOWN_NAMES: tuple[str, ...] = tuple(
    f"{prefix}{size}.pt" for prefix, sizes in PUBLISHED.values() for size in sizes
)
# The published file names, any case: prefix, size letter, `.pt`. (1.6.0's grammar also allows
# `-<task>` / `-<variant>` suffixes, but no such detect weights are published.)
NAME_RE = re.compile(r"libreyolo(?P<family>9|x)(?P<size>[a-z])\.pt", re.IGNORECASE)
_FAMILY_OF = {"9": "yolo9", "x": "yolox"}
# What random weights do to the postprocess timing differs by family (measured on 1.6.0's
# random-init files: YOLOv9 NMS about 0.5 ms, YOLOX-s 36 ms on a 2-core CPU).
_RANDOM_NMS = {
    "yolo9": "a random model scores every box far below the confidence threshold, so "
    "postprocess/NMS does almost no work",
    "yolox": "a random model scores many boxes above the confidence threshold, so "
    "postprocess/NMS does far more work than with trained weights",
}
_LABEL = {"yolo9": "YOLOv9", "yolox": "YOLOX"}
# torch.save writes a zip archive; legacy files start with a pickle protocol byte. An HTML error
# page served with status 200 (proxies, captive portals) is neither.
_CHECKPOINT_MAGIC = (b"PK\x03\x04", b"\x80")

WeightsOrigin = Literal["path", "cache", "download", "random"]


@dataclass(frozen=True, slots=True)
class ResolvedWeights:
    """Where the weights come from. `path` is None exactly when `random_init` is true."""

    spec: str  # the --weights argument as given
    path: Path | None
    family: str | None  # "yolo9"/"yolox" when the name says so; None = let the loader sniff
    size: str | None  # from the name, else the size hint
    random_init: bool = False
    source: WeightsOrigin = "path"
    warning: str | None = None  # non-empty when the run will not measure what the user asked for


def weights_dir() -> Path:
    """The cache directory for downloaded weights ($LIBREYOLO_WEIGHTS_DIR or ~/.cache/...)."""
    return Path(os.environ.get(WEIGHTS_DIR_ENV) or DEFAULT_WEIGHTS_DIR).expanduser()


def weights_url(name: str) -> str:
    """The download URL of a canonical name; $LIBREYOLO_WEIGHTS_URL is a template or a base URL."""
    template = os.environ.get(WEIGHTS_URL_ENV) or DEFAULT_WEIGHTS_URL
    if "{" not in template:
        template = template.rstrip("/") + "/{name}"
    return template.format(stem=name.removesuffix(".pt"), name=name)


def known_name(spec: str) -> tuple[str, str, str] | None:
    """(canonical name, family, size) when `spec` is a bare published name such as
    `libreyolo9T.pt` or `LibreYOLOXs.pt`."""
    if Path(spec).name != spec:  # has a directory part: a path, not a name
        return None
    match = NAME_RE.fullmatch(spec)
    if match is None:
        return None
    family = _FAMILY_OF[match["family"].lower()]
    prefix, sizes = PUBLISHED[family]
    size = match["size"].lower()
    return (f"{prefix}{size}.pt", family, size) if size in sizes else None


def resolve_weights(
    spec: str,
    *,
    size_hint: str | None = None,
    download: bool = True,
    timeout: float = DOWNLOAD_TIMEOUT_S,
) -> ResolvedWeights:
    """Resolve `--weights SPEC` (see the module docstring for the order)."""
    if not spec or not spec.strip():
        raise UsageError("--weights is empty", hint=f"use a .pt path or one of {_known_list()}")
    path = Path(spec).expanduser()
    known = known_name(spec)
    if path.is_file():
        if known:
            return ResolvedWeights(spec, path, known[1], known[2])
        return ResolvedWeights(spec, path, None, size_hint)
    if path.exists():
        raise UsageError(f"weights path is not a file: {spec}")
    if known is None:
        raise MissingFileError(
            f"weights not found: {spec}",
            hint=f"give an existing checkpoint path or one of {_known_list()}",
        )
    name, family, size = known
    if size_hint is not None and size_hint.lower() != size:
        raise UsageError(f"--size {size_hint} contradicts the weights name {name} (size {size})")
    cache = weights_dir()
    places: tuple[tuple[Path, Literal["path", "cache"]], ...] = (
        (Path("weights") / name, "path"),
        (cache / name, "cache"),
    )
    for candidate, source in places:
        if candidate.is_file():
            return ResolvedWeights(spec, candidate, family, size, source=source)
    url = weights_url(name)
    if download:
        try:
            target = _download(url, cache / name, timeout=timeout)
        except _DownloadFailed as exc:
            reason = f"download from {url} failed: {exc}"
        else:
            return ResolvedWeights(spec, target, family, size, source="download")
    else:
        reason = "downloads are disabled"
    return ResolvedWeights(
        spec,
        None,
        family,
        size,
        random_init=True,
        source="random",
        warning=_random_init_warning(name, family, size, cache, reason),
    )


class _DownloadFailed(Exception):
    """Any reason the file did not arrive; the caller falls back to random initialisation."""


def _download(url: str, target: Path, *, timeout: float) -> Path:
    """Fetch `url` to `target` through a temp file in the same directory, then rename (atomic)."""
    tmp: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        request = urllib.request.Request(url, headers={"User-Agent": "libreyolo-profile"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            fd, name = tempfile.mkstemp(
                prefix=f".{target.name}.", suffix=".part", dir=target.parent
            )
            tmp = Path(name)
            with os.fdopen(fd, "wb") as out:
                head = response.read(64 * 1024)
                if not head.startswith(_CHECKPOINT_MAGIC):
                    raise _DownloadFailed("the response is not a PyTorch checkpoint")
                out.write(head)
                received = len(head)
                while chunk := response.read(1 << 20):
                    out.write(chunk)
                    received += len(chunk)
            # A dropped connection can end read() early without an error; trust only complete files.
            expected = response.headers.get("Content-Length")
            if expected is not None and expected.isdigit() and int(expected) != received:
                raise _DownloadFailed(f"connection closed after {received} of {expected} bytes")
        os.replace(tmp, target)
        tmp = None
        return target
    except (urllib.error.URLError, HTTPException, OSError, ValueError) as exc:
        # URLError covers HTTP errors and refused connections; OSError timeouts and full disks;
        # ValueError a malformed URL from the environment.
        detail = exc.reason if type(exc) is urllib.error.URLError else exc
        raise _DownloadFailed(str(detail)) from exc
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()


def _random_init_warning(name: str, family: str, size: str, cache: Path, reason: str) -> str:
    return (
        f"WEIGHTS NOT AVAILABLE: {name} is not in ./weights or {cache} and {reason}. "
        f"Using RANDOMLY INITIALISED {_LABEL[family]}-{size} weights. Convolution and other "
        "forward-pass timings are real (they do not depend on weight values), but "
        f"{_RANDOM_NMS[family]} and its timing is NOT representative of real inference. To "
        "measure with real weights, copy "
        f"{name} into {cache} (or set {WEIGHTS_DIR_ENV}), pass a checkpoint path, or set "
        f"{WEIGHTS_URL_ENV} to a reachable mirror."
    )


def _known_list() -> str:
    return ", ".join(KNOWN_NAMES)
