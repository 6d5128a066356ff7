"""Find and decode the images an inference run reads: family-neutral file I/O.

Role: resolve an `infer` SOURCE into image paths (the bundled sample, a file, a folder) and
decode one file into an RGB PIL image, with the reference's messages. Must not letterbox,
normalise, move anything to a device, time anything, print or exit.
"""

from __future__ import annotations

import os
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from libreyolo.errors import MissingFileError, UsageError

# Our own synthetic scene (scripts/make_sample_image.py, CC0); 1.6.0's photo is not shipped.
SAMPLE_IMAGE: Path = Path(__file__).resolve().parents[1] / "assets" / "sample.jpg"

# Directory sources yield children with these lower-cased suffixes: libreyolo 1.6.0's list.
IMAGE_SUFFIXES: frozenset[str] = frozenset(
    {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"}
)

# What PIL raises on bad files; SyntaxError comes from a few plugins on garbage headers.
_DECODE_ERRORS = (
    UnidentifiedImageError,
    Image.DecompressionBombError,
    OSError,
    ValueError,
    SyntaxError,
)


def load_images(source: str | os.PathLike[str] | None) -> list[Path]:
    """Resolve an `infer` SOURCE into image paths (no decoding).

    None → the bundled sample image; an existing file → itself, whatever its extension; a
    directory → its direct children with an image suffix, sorted by path string. Nothing found →
    an exit-2 error with the reference's message `no images found at: <source>`.
    """
    if source is None:
        if not SAMPLE_IMAGE.is_file():
            raise MissingFileError(f"bundled sample image is missing: {SAMPLE_IMAGE}")
        return [SAMPLE_IMAGE]
    path = Path(source)
    message = f"no images found at: {os.fspath(source)}"
    if path.is_dir():
        found = [p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()]
        if not found:
            raise UsageError(message, hint=f"accepted suffixes: {' '.join(sorted(IMAGE_SUFFIXES))}")
        return sorted(found, key=str)
    if path.exists():
        return [path]
    raise MissingFileError(message)


def decode_image(path: str | os.PathLike[str]) -> Image.Image:
    """Decode one file into an RGB PIL image (EXIF orientation ignored, as in 1.6.0's cv2 path)."""
    try:
        with Image.open(path) as img:
            # convert() forces the full decode inside the try, so truncated files fail here.
            return img.convert("RGB")
    except FileNotFoundError as exc:
        raise MissingFileError(f"not found: {os.fspath(path)}") from exc
    except _DECODE_ERRORS as exc:
        raise UsageError(f"cannot decode image: {os.fspath(path)} ({exc})") from exc
