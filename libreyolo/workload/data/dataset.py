"""YOLO-format labels and the dataset object that decodes, augments and returns one sample.

Role: parse every label file up front (`class cx cy w h` normalised, or a polygon reduced to its
box), check every image's header (and that JPEGs are complete), and apply the bad-file policy:
`on_bad="skip"` drops bad rows and images and records one line per problem in `issues`
(`file:line: what` for labels, `file: what` for images) for the caller to print; `"refuse"` raises
DatasetError naming the first one. At item time it decodes with PIL, pre-resizes so the longer
side is `imgsz`, runs `augment.augment_tiles` and returns a `Sample` with a uint8 CHW image.
With `cache=True` every image is decoded and pre-resized once, up front (threads), and kept in
RAM, so an item costs only its augmentation (Ultralytics' `cache=ram`).

Must not: batch or normalise (the loader does), print or log (the caller prints `issues`), or
crash a run on one bad file under "skip" (an image that fails to decode later is replaced).
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

import torch
from PIL import Image, UnidentifiedImageError
from torch.utils.data import Dataset

from libreyolo.errors import DatasetError, UsageError
from libreyolo.workload.data.augment import AugmentConfig, Tile, augment_tiles
from libreyolo.workload.data.dataset_config import DatasetSpec

__all__ = [
    "OnBad",
    "Sample",
    "YoloDataset",
    "check_image",
    "max_label_rows",
    "parse_label_file",
]

OnBad = Literal["skip", "refuse"]
Row = tuple[int, float, float, float, float]  # class, x1, y1, x2, y2 normalised to [0, 1]
_COORD_TOLERANCE = 1e-4  # label writers round; 1.00001 is a rounding artefact, not an error
_MOSAIC_PARTNER_TRIES = 20  # 1.6.0 re-draws partners up to 20 times to prefer labelled images


class Sample(NamedTuple):
    """One item: image uint8 (3, S, S), boxes float32 (n, 4) pixel xyxy, classes int64 (n,)."""

    image: torch.Tensor
    boxes: torch.Tensor
    classes: torch.Tensor
    path: str


class _BadImageError(Exception):
    """An image that cannot be decoded (internal: turned into an issue or a DatasetError)."""


@dataclass(frozen=True, slots=True)
class _Item:
    path: Path
    rows: tuple[Row, ...]


def parse_label_file(path: Path, nc: int) -> tuple[list[Row], list[str]]:
    """Parse one label file into rows and issues; a missing file is a background image."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], []
    except (OSError, UnicodeDecodeError) as err:
        return [], [f"{path}: unreadable label file ({err})"]
    rows: list[Row] = []
    issues: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row = _parse_row(line, nc)
        if isinstance(row, str):
            issues.append(f"{path}:{number}: {row}")
        elif row is not None:
            rows.append(row)
    return rows, issues


def max_label_rows(label_paths: Iterable[Path]) -> int:
    """The most non-blank rows in any one label file (missing or unreadable files count 0):
    an upper bound on one image's boxes, read without parsing (rows found bad later drop out)."""
    most = 0
    for path in label_paths:
        try:
            text = path.read_bytes()
        except OSError:
            continue
        most = max(most, sum(1 for line in text.splitlines() if line.strip()))
    return most


def _parse_row(line: str, nc: int) -> Row | str | None:
    """A row, an error message, or None for a well-formed box of zero visible area."""
    parts = line.split()
    n = len(parts)
    if n < 5 or (n > 5 and (n % 2 == 0 or n < 7)):
        return f"expected 5 values (class cx cy w h) or a polygon of >= 3 points, got {n} values"
    try:
        values = [float(p) for p in parts]
    except ValueError:
        return f"non-numeric value in {line.strip()!r}"
    if not all(math.isfinite(v) for v in values):
        return f"non-finite value in {line.strip()!r}"
    if values[0] != int(values[0]):
        return f"class {parts[0]} is not an integer"
    if not 0 <= values[0] < nc:
        return f"class {parts[0]} out of range [0, {nc})"
    coords = values[1:]
    if any(c < -_COORD_TOLERANCE or c > 1 + _COORD_TOLERANCE for c in coords):
        return f"coordinates must be normalised to [0, 1], got {' '.join(parts[1:])}"
    if n == 5:
        cx, cy, w, h = coords
        x1, y1, x2, y2 = cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2
    else:  # polygon: its extent is the box
        x1, x2 = min(coords[0::2]), max(coords[0::2])
        y1, y2 = min(coords[1::2]), max(coords[1::2])
    x1, y1, x2, y2 = (min(1.0, max(0.0, v)) for v in (x1, y1, x2, y2))
    if x2 <= x1 or y2 <= y1:
        return None  # dropped silently, as 1.6.0 does: nothing visible to detect
    return int(values[0]), x1, y1, x2, y2


def check_image(path: Path) -> str | None:
    """None for a usable image, else what is wrong (`file: what`). Decodes only when in doubt."""
    try:
        with Image.open(path) as image:
            width, height = image.size
            is_jpeg = image.format == "JPEG"
    except FileNotFoundError:
        return f"{path}: image file not found"
    except (OSError, UnidentifiedImageError, ValueError, Image.DecompressionBombError) as err:
        return f"{path}: unreadable image ({err})"
    if width < 1 or height < 1:
        return f"{path}: empty image ({width}x{height})"
    if is_jpeg and not _ends_with_eoi(path):
        # Trailing bytes after the end marker are common and harmless: decode to be sure.
        try:
            _decode(path)
        except _BadImageError as err:
            return f"{path}: {err}"
    return None


def _ends_with_eoi(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-2, os.SEEK_END)
        return fh.read(2) == b"\xff\xd9"


def _decode(path: Path, longest: int | None = None) -> Image.Image:
    """The image as RGB (EXIF orientation ignored, as 1.6.0). `longest`: the longer side the
    caller resizes to; a JPEG is then decoded at the smallest DCT scale (1/2, 1/4, 1/8) that
    still covers it, so the pair costs about what 1.6.0's OpenCV decode and INTER_LINEAR resize
    do (a full Pillow decode plus its antialiased resize cost 2.6x that: docs/workload-parity.md
    row 4)."""
    try:
        with Image.open(path) as image:
            if longest is not None and image.format == "JPEG":
                w, h = image.size
                r = longest / max(w, h)
                image.draft("RGB", (max(1, round(w * r)), max(1, round(h * r))))
            return image.convert("RGB")  # forces a full decode
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as err:
        raise _BadImageError(f"corrupt image ({err})") from None


class YoloDataset(Dataset[Sample]):
    """The images and labels of one DatasetSpec, augmented to imgsz x imgsz per item."""

    def __init__(
        self,
        spec: DatasetSpec,
        imgsz: int,
        augment: AugmentConfig | None = None,
        *,
        on_bad: OnBad = "skip",
        seed: int | None = None,
        cache: bool = False,
    ) -> None:
        if imgsz < 32:
            raise UsageError(f"image size must be at least 32, got {imgsz}")
        if on_bad not in ("skip", "refuse"):
            raise UsageError(f"on_bad must be 'skip' or 'refuse', got {on_bad!r}")
        self.spec, self.imgsz, self.on_bad, self.seed = spec, imgsz, on_bad, seed
        self.augment = augment if augment is not None else AugmentConfig()
        self.issues: list[str] = []  # one line per skipped row or image, in file order
        self._items = self._scan(spec)
        self._labelled = [i for i, item in enumerate(self._items) if item.rows]
        self._cached: dict[Path, Tile] = {}
        if cache:
            self._cached = self._preload()

    def __len__(self) -> int:
        return len(self._items)

    @property
    def num_boxes(self) -> int:
        """Boxes over all kept images, before augmentation."""
        return sum(len(item.rows) for item in self._items)

    def __getitem__(self, index: int) -> Sample:
        rng = self._rng(index)
        # Under "skip", an image that breaks only now (changed on disk, decoder error) is replaced
        # by the next one rather than ending the run; issues recorded in a worker stay there.
        for attempt in range(len(self._items)):
            position = (index + attempt) % len(self._items)
            try:
                return self._sample(position, rng)
            except _BadImageError as err:
                issue = f"{self._items[position].path}: {err}"
                if self.on_bad == "refuse":
                    raise DatasetError(f"refusing the dataset: {issue}") from None
                self.issues.append(issue)
        raise DatasetError(f"no image of {self.spec.root} could be decoded")

    def _scan(self, spec: DatasetSpec) -> list[_Item]:
        if not any(p.is_file() for p in spec.label_paths):
            raise DatasetError(
                f"no label files found for the {spec.num_images} {spec.split} images of "
                f"{spec.root}; expected e.g. {spec.label_paths[0]}",
                hint="labels live in a 'labels' folder parallel to 'images', one .txt per image",
            )
        workers = max(1, min(8, os.cpu_count() or 1, len(spec.image_paths)))
        with ThreadPoolExecutor(max_workers=workers) as pool:  # PIL and file I/O release the GIL
            results = list(pool.map(self._scan_one, spec.image_paths, spec.label_paths))
        items: list[_Item] = []
        for item, issues in results:
            self.issues.extend(issues)
            if item is not None:
                items.append(item)
        if self.issues and self.on_bad == "refuse":
            more = len(self.issues) - 1
            suffix = f" (and {more} more problem{'s' * (more > 1)})" if more else ""
            raise DatasetError(
                f"refusing the dataset: {self.issues[0]}{suffix}",
                hint="fix or remove the bad files, or skip them (on_bad='skip')",
            )
        if not items:
            raise DatasetError(f"no usable image in {spec.root}: {self.issues[0]}")
        return items

    def _scan_one(self, image: Path, label: Path) -> tuple[_Item | None, list[str]]:
        problem = check_image(image)
        if problem is not None:
            return None, [problem]
        rows, issues = parse_label_file(label, self.spec.nc)
        return _Item(image, tuple(rows)), issues

    def _rng(self, index: int) -> random.Random:
        if self.seed is None:
            # torch re-seeds `random` in each worker, so workers draw different streams.
            return random.Random(random.getrandbits(64))
        return random.Random(self.seed * 1_000_003 + index)

    def _sample(self, position: int, rng: random.Random) -> Sample:
        item = self._items[position]
        tiles = [self._load(item)]
        if self.augment.mosaic and rng.random() < self.augment.mosaic_prob:
            tiles += [self._partner(rng) for _ in range(3)]
        out = augment_tiles(tiles, self.imgsz, self.augment, rng)
        return Sample(_to_chw(out.image), out.boxes.float(), out.classes.long(), str(item.path))

    def _partner(self, rng: random.Random) -> Tile:
        """A random mosaic partner, preferring labelled images; a broken one is re-drawn."""
        last: _BadImageError | None = None
        for _ in range(_MOSAIC_PARTNER_TRIES):
            pool = self._labelled or range(len(self._items))
            try:
                return self._load(self._items[rng.choice(pool)])
            except _BadImageError as err:
                last = err
        raise last or _BadImageError("no mosaic partner could be decoded")

    def _preload(self) -> dict[Path, Tile]:
        """Every decodable image, decoded and pre-resized; a bad one stays out and fails later
        the way it would without the cache."""

        def load(item: _Item) -> tuple[Path, Tile | None]:
            try:
                return item.path, self._load(item)
            except _BadImageError:
                return item.path, None

        workers = max(1, min(8, os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers) as pool:  # PIL decoding releases the GIL
            loaded = list(pool.map(load, self._items))
        return {path: tile for path, tile in loaded if tile is not None}

    def _load(self, item: _Item) -> Tile:
        """Decode and pre-resize so the longer side is imgsz; boxes in pixels of that image."""
        cached = self._cached.get(item.path)
        if cached is not None:
            return cached
        image = _decode(item.path, self.imgsz)
        w, h = image.size
        r = self.imgsz / max(w, h)
        if r != 1:
            w, h = max(1, round(w * r)), max(1, round(h * r))
            image = image.resize((w, h), Image.Resampling.BILINEAR)
        if item.rows:
            rows = torch.tensor(item.rows, dtype=torch.float32)
            boxes = rows[:, 1:] * torch.tensor([w, h, w, h], dtype=torch.float32)
            classes = rows[:, 0].long()
        else:
            boxes, classes = torch.zeros((0, 4)), torch.zeros((0,), dtype=torch.long)
        return Tile(image, boxes, classes)


def _to_chw(image: Image.Image) -> torch.Tensor:
    w, h = image.size
    # bytearray: a writable copy, which torch.frombuffer needs to share without a warning.
    flat = torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8)
    return flat.view(h, w, 3).permute(2, 0, 1).contiguous()
