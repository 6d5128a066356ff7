"""The built-in synthetic dataset: real JPEGs of drawn shapes with exact YOLO labels, made offline.

Role: stand in for downloadable sets (coco128 and friends) when nothing can be fetched. Each image
is a textured, low-saturation background with 1-4 non-overlapping filled rectangles or ellipses in
three saturated colours; the colour is the class (0 red, 1 green, 2 blue). Labels are the exact
pixel extent of each drawn shape. Output depends only on (seed, sizes, counts, generator version),
so two runs write byte-identical files (given the same Pillow/libjpeg).

Must not: import torch, read user data, or leave a partial dataset behind: a set is generated into
a staging folder next to its final place (`.<set>.partial-<pid>-<hex>`, flocked by its owner while
it draws) and renamed into place in one step. A generation killed by SIGKILL or a power cut leaves
its staging folder; the next generation under the same root deletes every staging folder whose
pid is gone and whose lock no one holds (a live owner in another pid namespace still holds it).
Nor draw a set larger than MAX_TRAIN_IMAGES: a window that needs more is refused first.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from PIL import Image, ImageDraw

from libreyolo.errors import DatasetError, UsageError
from libreyolo.pids import pid_alive

try:
    import fcntl
except ImportError:  # Windows: no flock; leftovers are judged by their pid alone there
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "CLASS_NAMES",
    "DEFAULT_TRAIN_IMAGES",
    "GENERATOR_VERSION",
    "MAX_BOXES_PER_IMAGE",
    "MAX_TRAIN_IMAGES",
    "check_window_images",
    "make_synthetic",
    "pending_draw",
    "render_sample",
    "synthetic_dir",
    "train_images_for",
]

GENERATOR_VERSION = 1  # bump when the drawing changes, so cached sets are regenerated
CLASS_NAMES = ("red", "green", "blue")
_COLOURS = ((220, 40, 40), (40, 190, 60), (40, 70, 220))
MAX_BOXES_PER_IMAGE = 4  # shapes drawn per image at most, so label rows per file at most
_GAP_PX = 2  # shapes keep this distance, so every label is the extent of exactly one shape
_JPEG_QUALITY = 90
DEFAULT_TRAIN_IMAGES = 64  # the smallest set; larger ones grow in steps of this many images
DEFAULT_VAL_IMAGES = 16
DEFAULT_IMGSZ = 320  # drawn at this side; the dataset letterboxes it to the run's --imgsz
DEFAULT_SEED = 0
# The largest set we draw (AutoBatch, --batch -1, fits under it too). Drawing and encoding
# takes ~3 ms an image on one core and each size stays cached on disk (~14 kB an image at
# 320 px): 4096 images are ~12 s and ~55 MB once, where a batch of hundreds on a large GPU
# would otherwise ask for tens of thousands of images (a typo, 100000, for minutes and GBs),
# generated before the first step and kept per size.
MAX_TRAIN_IMAGES = 4096
_STAGING = re.compile(r"\.(synthetic-v\d+-[a-z0-9-]+)\.partial-(\d+)-[0-9a-f]{8}")

Box = tuple[int, int, int, int, int]  # class, x1, y1, x2, y2 in pixels (x2, y2 exclusive)


def synthetic_dir(root: Path, *, num_train: int, num_val: int, imgsz: int, seed: int) -> Path:
    """The cache folder of one parameter set (the key is the folder name)."""
    key = f"synthetic-v{GENERATOR_VERSION}-train{num_train}-val{num_val}-{imgsz}px-seed{seed}"
    return root / key


def train_images_for(num_batches: int | None, batch: int | None) -> int:
    """Train images a run of `num_batches` batches of `batch` needs, rounded up to a multiple
    of DEFAULT_TRAIN_IMAGES (so nearby runs share one cached set), never below it and never
    above MAX_TRAIN_IMAGES (a run that needs more starts its window on a fresh epoch and trims
    its calibration steps, as on any small dataset; `check_window_images` refuses a window that
    cannot fit at all); the default set when either count is unknown (AutoBatch has not fitted
    the batch yet).

    Image i depends only on (seed, split, i), so a larger set starts with the smaller one's images.
    """
    if num_batches is None or batch is None or num_batches < 1 or batch < 1:
        return DEFAULT_TRAIN_IMAGES
    blocks = -(-num_batches * batch // DEFAULT_TRAIN_IMAGES)  # ceiling division, at least 1
    return min(blocks * DEFAULT_TRAIN_IMAGES, MAX_TRAIN_IMAGES)


def check_window_images(num_measured: int, batch: int) -> None:
    """UsageError, before anything is drawn, when the measured steps alone need more images in
    one epoch than the largest set we draw (warmup may span epochs; calibration is trimmed)."""
    needed = num_measured * batch
    if needed > MAX_TRAIN_IMAGES:
        raise UsageError(
            f"the synthetic dataset holds at most {MAX_TRAIN_IMAGES} images, but "
            f"{num_measured} measured steps of --batch {batch} need {needed} in one epoch",
            hint="lower --batch or --steps",
        )


def pending_draw(root: Path, num_train: int) -> Path | None:
    """Where `make_synthetic(root, num_train=num_train)` will draw a set, or None when that
    set is cached already (nothing to draw)."""
    final = synthetic_dir(
        root,
        num_train=num_train,
        num_val=DEFAULT_VAL_IMAGES,
        imgsz=DEFAULT_IMGSZ,
        seed=DEFAULT_SEED,
    )
    return None if (final / "synthetic.yaml").is_file() else final


def make_synthetic(
    root: Path,
    *,
    num_train: int = DEFAULT_TRAIN_IMAGES,
    num_val: int = DEFAULT_VAL_IMAGES,
    imgsz: int = DEFAULT_IMGSZ,
    seed: int = DEFAULT_SEED,
) -> Path:
    """Generate the set under `root` once (cached by its parameters) and return its YAML path."""
    if num_train < 1 or num_val < 1:
        raise UsageError("the synthetic dataset needs at least one train and one val image")
    if imgsz < 32:
        raise UsageError(f"synthetic image size must be at least 32 px, got {imgsz}")
    final = synthetic_dir(root, num_train=num_train, num_val=num_val, imgsz=imgsz, seed=seed)
    yaml_path = final / "synthetic.yaml"
    if yaml_path.is_file():
        return yaml_path
    root.mkdir(parents=True, exist_ok=True)
    remove_leftovers(root)
    with _staging(root, final) as tmp:
        _write_split(tmp, "train", num_train, imgsz, seed)
        _write_split(tmp, "val", num_val, imgsz, seed)
        (tmp / "synthetic.yaml").write_text(_yaml_text(seed), encoding="utf-8")
        _publish(tmp, final)
    return yaml_path


@contextlib.contextmanager
def _staging(root: Path, final: Path) -> Iterator[Path]:
    """A fresh staging folder named with this pid and flocked for the block; deleted after
    (gone already after a successful rename), an interrupt included."""
    tmp = root / f".{final.name}.partial-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    fd: int | None = None
    try:
        fd = os.open(tmp, os.O_RDONLY)
        if fcntl is not None:
            with contextlib.suppress(OSError):  # a file system without flock: the pid says it
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield tmp
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock
        shutil.rmtree(tmp, ignore_errors=True)


def remove_leftovers(root: Path) -> None:
    """Delete the staging folders under `root` of generations that are gone: their pid is not
    alive and no one holds their lock. Anything else is left alone, unreadable entries too."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        match = _STAGING.fullmatch(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        if not pid_alive(int(match[2])) and not _locked(Path(entry.path)):
            shutil.rmtree(entry.path, ignore_errors=True)


def _locked(folder: Path) -> bool:
    """Whether a live generation holds the flock on `folder` (unopenable counts as held)."""
    if fcntl is None:
        return False
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # no flock on this file system: the pid alone decides
        return False
    finally:
        os.close(fd)  # releases a lock just taken
    return False


def render_sample(rng: random.Random, imgsz: int) -> tuple[Image.Image, list[Box]]:
    """Draw one image and return it with its exact boxes (before JPEG encoding)."""
    image = _background(rng, imgsz)
    boxes: list[Box] = []
    for _ in range(rng.randint(1, MAX_BOXES_PER_IMAGE)):
        placed = _place(rng, imgsz, boxes)
        if placed is None:
            continue
        x1, y1, x2, y2 = placed
        cls = rng.randrange(len(_COLOURS))
        mask = Image.new("L", (imgsz, imgsz), 0)
        draw = ImageDraw.Draw(mask)
        if rng.random() < 0.5:
            draw.rectangle((x1, y1, x2 - 1, y2 - 1), fill=255)
        else:
            draw.ellipse((x1, y1, x2 - 1, y2 - 1), fill=255)
        extent = mask.getbbox()  # the label is what was drawn, not what was asked for
        if extent is None:
            continue
        image.paste(_COLOURS[cls], mask=mask)
        boxes.append((cls, *extent))
    return image, boxes


def _place(rng: random.Random, imgsz: int, taken: list[Box]) -> tuple[int, int, int, int] | None:
    lo, hi = max(4, imgsz // 12), max(5, imgsz * 2 // 5)
    for _ in range(50):
        w, h = rng.randint(lo, hi), rng.randint(lo, hi)
        x1, y1 = rng.randint(0, imgsz - w), rng.randint(0, imgsz - h)
        x2, y2 = x1 + w, y1 + h
        if all(_apart((x1, y1, x2, y2), b[1:]) for b in taken):
            return x1, y1, x2, y2
    return None


def _apart(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """True when boxes a and b (x1, y1, x2, y2) are at least _GAP_PX apart on some axis."""
    return (
        a[2] + _GAP_PX <= b[0]
        or b[2] + _GAP_PX <= a[0]
        or a[3] + _GAP_PX <= b[1]
        or b[3] + _GAP_PX <= a[1]
    )


def _background(rng: random.Random, imgsz: int) -> Image.Image:
    """A smooth grey-ish noise field plus thin grey strokes: texture without saturated colour."""
    cells = 12
    pixels = []
    for _ in range(cells * cells):
        v = rng.randint(70, 190)
        pixels.append(tuple(v + rng.randint(-12, 12) for _ in range(3)))
    small = Image.new("RGB", (cells, cells))
    small.putdata(pixels)
    image = small.resize((imgsz, imgsz), Image.Resampling.BILINEAR)
    draw = ImageDraw.Draw(image)
    for _ in range(rng.randint(4, 10)):
        v = rng.randint(60, 200)
        xy = [rng.randint(0, imgsz - 1) for _ in range(4)]
        draw.line(xy, fill=(v, v, v), width=rng.randint(1, 3))
    return image


def _write_split(root: Path, split: str, count: int, imgsz: int, seed: int) -> None:
    images, labels = root / "images" / split, root / "labels" / split
    images.mkdir(parents=True)
    labels.mkdir(parents=True)
    for index in range(count):
        # A string seed is hashed with SHA-512 by `random`, so it is stable across processes.
        rng = random.Random(f"libreyolo-synthetic:{seed}:{split}:{index}")
        image, boxes = render_sample(rng, imgsz)
        stem = f"{index:06d}"
        image.save(images / f"{stem}.jpg", format="JPEG", quality=_JPEG_QUALITY)
        (labels / f"{stem}.txt").write_text(_label_text(boxes, imgsz), encoding="utf-8")


def _label_text(boxes: list[Box], imgsz: int) -> str:
    rows = []
    for cls, x1, y1, x2, y2 in boxes:
        cx, cy = (x1 + x2) / 2 / imgsz, (y1 + y2) / 2 / imgsz
        w, h = (x2 - x1) / imgsz, (y2 - y1) / imgsz
        rows.append(f"{cls} {cx:.6f} {cy:.6f} {w:.6f} {h:.6f}\n")
    return "".join(rows)


def _yaml_text(seed: int) -> str:
    names = "".join(f"  {i}: {name}\n" for i, name in enumerate(CLASS_NAMES))
    return (
        f"# libreyolo synthetic dataset (generator v{GENERATOR_VERSION}, seed {seed})\n"
        "path: .\ntrain: images/train\nval: images/val\n"
        f"nc: {len(CLASS_NAMES)}\nnames:\n{names}"
    )


def _publish(tmp: Path, final: Path) -> None:
    """Rename the finished set into place; a concurrent generator that won the race is fine."""
    try:
        os.rename(tmp, final)
    except OSError:
        if (final / "synthetic.yaml").is_file():
            return  # another process published the same (deterministic) set first
        raise DatasetError(
            f"cannot create the synthetic dataset at {final}",
            hint="remove that folder if it is a leftover, or set LIBREYOLO_DATASETS_DIR",
        ) from None
