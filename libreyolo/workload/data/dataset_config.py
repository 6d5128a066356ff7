"""Dataset YAML and name resolution: turn `coco128`, `synthetic` or a YAML path into a DatasetSpec.

Role: read a YOLO-format dataset YAML (`path`, `train`, `val`, `test`, `names` as list or dict, or
`nc`), resolve its relative paths, list the split's images and map each image to its label file
(every directory named exactly `images` becomes `labels`, extension `.txt`).

Must not: decode images, read label files, download anything or import torch. The only file it may
write is the synthetic set, through `synthetic.make_synthetic`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from libreyolo.bounded_yaml import load_yaml_bounded
from libreyolo.errors import DatasetError, MissingFileError, UsageError
from libreyolo.workload.data.synthetic import make_synthetic, train_images_for

__all__ = [
    "IMAGE_SUFFIXES",
    "KNOWN_DATASETS",
    "DatasetSpec",
    "datasets_dir",
    "label_path_for",
    "load_dataset_yaml",
    "resolve_dataset",
]

DATASETS_ENV = "LIBREYOLO_DATASETS_DIR"
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp"})
KNOWN_DATASETS = ("coco128", "synthetic")
SPLITS = ("train", "val", "test")
MAX_CLASSES = 10_000  # COCO has 80, LVIS 1203: more is a broken YAML, not a dataset

# The 80 COCO class names in index order (coco128's YAML as libreyolo 1.6.0 ships it).
_COCO_TEXT = (
    "person|bicycle|car|motorcycle|airplane|bus|train|truck|boat|traffic light|fire hydrant|"
    "stop sign|parking meter|bench|bird|cat|dog|horse|sheep|cow|elephant|bear|zebra|giraffe|"
    "backpack|umbrella|handbag|tie|suitcase|frisbee|skis|snowboard|sports ball|kite|baseball bat|"
    "baseball glove|skateboard|surfboard|tennis racket|bottle|wine glass|cup|fork|knife|spoon|"
    "bowl|banana|apple|sandwich|orange|broccoli|carrot|hot dog|pizza|donut|cake|chair|couch|"
    "potted plant|bed|dining table|toilet|tv|laptop|mouse|remote|keyboard|cell phone|microwave|"
    "oven|toaster|sink|refrigerator|book|clock|vase|scissors|teddy bear|hair drier|toothbrush"
)
_COCO_NAMES = tuple(_COCO_TEXT.split("|"))


@dataclass(frozen=True, slots=True)
class DatasetSpec:
    """One split of a dataset, fully resolved: what YoloDataset reads and nothing more."""

    root: Path
    yaml_path: Path | None
    split: str
    image_paths: tuple[Path, ...]
    label_paths: tuple[Path, ...]  # same length and order as image_paths; files may be absent
    names: tuple[str, ...]

    @property
    def nc(self) -> int:
        """Number of classes."""
        return len(self.names)

    @property
    def num_images(self) -> int:
        """Number of images listed for this split (before any bad file is skipped)."""
        return len(self.image_paths)


def datasets_dir() -> Path:
    """Where named datasets live: `$LIBREYOLO_DATASETS_DIR`, else `~/.cache/libreyolo/datasets`."""
    env = os.environ.get(DATASETS_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "libreyolo" / "datasets"


def label_path_for(image: Path) -> Path:
    """The label file of an image: every `images` directory becomes `labels`, suffix `.txt`."""
    parts = ["labels" if part == "images" else part for part in image.parts[:-1]]
    return Path(*parts, image.stem + ".txt") if parts else Path(image.stem + ".txt")


def is_generated(name_or_yaml: str) -> bool:
    """True when `name_or_yaml` resolves to the built-in synthetic set, which is generated to
    the size a run asks for (a file or folder of that name is a dataset of its own)."""
    return name_or_yaml == "synthetic" and not Path(name_or_yaml).expanduser().exists()


def resolve_dataset(
    name_or_yaml: str,
    *,
    split: str = "train",
    window_batches: int | None = None,
    batch: int | None = None,
) -> DatasetSpec:
    """Resolve a registry name (`synthetic`, `coco128`) or a dataset YAML path into a spec.

    `window_batches` batches of `batch` images are what the caller will read in one epoch; the
    built-in `synthetic` set is generated (once, cached by size) to hold them. Other datasets
    ignore both: they are what they are.

    Raises:
        MissingFileError: a path that looks like a YAML file but does not exist.
        DatasetError: an unknown name, a named dataset not on disk, or an unusable YAML.
        UsageError: an unknown split.
    """
    if split not in SPLITS:
        raise UsageError(f"unknown dataset split {split!r}; expected one of {', '.join(SPLITS)}")
    candidate = Path(name_or_yaml).expanduser()
    if candidate.is_file():
        return load_dataset_yaml(candidate, split=split)
    if candidate.is_dir():
        return load_dataset_yaml(_yaml_in_dir(candidate), split=split)
    if name_or_yaml == "synthetic":
        num_train = train_images_for(window_batches, batch)
        return load_dataset_yaml(make_synthetic(datasets_dir(), num_train=num_train), split=split)
    if name_or_yaml == "coco128":
        return _resolve_coco128(split)
    if candidate.suffix in (".yaml", ".yml") or os.sep in name_or_yaml:
        raise MissingFileError(f"dataset YAML not found: {name_or_yaml}")
    raise DatasetError(
        f"unknown dataset {name_or_yaml!r}; known names: {', '.join(KNOWN_DATASETS)}",
        hint="or pass the path of a dataset YAML",
    )


def load_dataset_yaml(yaml_path: Path, *, split: str = "train") -> DatasetSpec:
    """Read a dataset YAML and list one split's images and label paths."""
    if not yaml_path.is_file():
        raise MissingFileError(f"dataset YAML not found: {yaml_path}")
    raw = load_yaml_bounded(yaml_path, error=DatasetError)
    if not isinstance(raw, dict):
        raise DatasetError(f"{yaml_path}: a dataset YAML must be a mapping of keys")
    return _spec_from_mapping(raw, yaml_path=yaml_path, split=split)


def _spec_from_mapping(raw: dict[str, object], *, yaml_path: Path, split: str) -> DatasetSpec:
    names = _parse_names(raw, yaml_path)
    root = _resolve_root(raw.get("path"), yaml_path)
    entry = raw.get(split)
    if entry is None:
        raise DatasetError(f"{yaml_path}: no {split!r} entry; the YAML lists no images for it")
    entries = entry if isinstance(entry, list) else [entry]
    images = tuple(_list_images((str(e) for e in entries), root, yaml_path))
    if not images:
        raise DatasetError(
            f"{yaml_path}: no images found for split {split!r} under {root}",
            hint="image suffixes: " + " ".join(sorted(IMAGE_SUFFIXES)),
        )
    labels = tuple(label_path_for(p) for p in images)
    recorded = yaml_path.resolve() if yaml_path.is_file() else None  # None: built-in layout
    return DatasetSpec(root, recorded, split, images, labels, names)


def _parse_names(raw: dict[str, object], yaml_path: Path) -> tuple[str, ...]:
    names, nc = raw.get("names"), raw.get("nc")
    if nc is not None and (isinstance(nc, bool) or not isinstance(nc, int) or nc < 1):
        raise DatasetError(f"{yaml_path}: 'nc' must be a positive integer, got {_brief(nc)}")
    if (nc or 0) > MAX_CLASSES or (isinstance(names, list | dict) and len(names) > MAX_CLASSES):
        raise DatasetError(f"{yaml_path}: more than {MAX_CLASSES} classes")
    if names is None:
        if nc is None:
            raise DatasetError(f"{yaml_path}: needs 'names' (a list or a dict) or 'nc'")
        return tuple(f"class{i}" for i in range(nc))
    if isinstance(names, list):
        parsed = tuple(_class_name(n, i, yaml_path) for i, n in enumerate(names))
    elif isinstance(names, dict):
        parsed = _names_from_dict(names, yaml_path)
    else:
        raise DatasetError(f"{yaml_path}: 'names' must be a list or a dict, got {_brief(names)}")
    if not parsed:
        raise DatasetError(f"{yaml_path}: 'names' is empty")
    if nc is not None and nc != len(parsed):
        raise DatasetError(f"{yaml_path}: 'nc' is {nc} but 'names' lists {len(parsed)} classes")
    return parsed


def _names_from_dict(names: dict[object, object], yaml_path: Path) -> tuple[str, ...]:
    try:
        by_index = {_class_index(k): _class_name(v, k, yaml_path) for k, v in names.items()}
    except ValueError:
        raise DatasetError(f"{yaml_path}: 'names' keys must be class indices 0..n-1") from None
    if sorted(by_index) != list(range(len(by_index))):
        raise DatasetError(f"{yaml_path}: 'names' keys must be exactly 0..{len(by_index) - 1}")
    return tuple(by_index[i] for i in range(len(by_index)))


def _class_index(key: object) -> int:
    if not isinstance(key, str | int) or isinstance(key, bool):
        raise ValueError(key)
    return int(key)


def _class_name(value: object, index: object, yaml_path: Path) -> str:
    """A class name: text, or a number written without quotes (YAML reads `0` as an int)."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value)
    raise DatasetError(f"{yaml_path}: 'names' entry {index!r} must be a name, got {_brief(value)}")


def _brief(value: object) -> str:
    """`value` for a one-line message: its repr, or its type when that is long."""
    text = repr(value)
    return text if len(text) <= 40 and "\n" not in text else f"a {type(value).__name__}"


def _resolve_root(path: object, yaml_path: Path) -> Path:
    """The dataset root: `path` if absolute, else relative to the YAML's folder, else datasets dir.

    The YAML's folder comes first because a user's YAML normally sits next to its data; 1.6.0's
    built-in YAMLs (`path: coco128`) live apart from the data, which the datasets dir covers.
    """
    base = yaml_path.parent.resolve()
    if path is None or str(path).strip() == "":
        return base
    given = Path(str(path)).expanduser()
    tried = [given] if given.is_absolute() else [base / given, datasets_dir() / given]
    for root in tried:
        if root.is_dir():
            return root.resolve()
    raise DatasetError(
        f"{yaml_path}: dataset root {str(path)!r} not found; tried " + ", ".join(map(str, tried))
    )


def _list_images(entries: Iterable[str], root: Path, yaml_path: Path) -> list[Path]:
    images: list[Path] = []
    for entry in entries:
        target = Path(entry).expanduser()
        target = target if target.is_absolute() else root / target
        if target.is_dir():
            found = (p for p in target.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
            images.extend(sorted(found))
        elif target.is_file() and target.suffix.lower() == ".txt":
            images.extend(_read_image_list(target))
        elif target.is_file() and target.suffix.lower() in IMAGE_SUFFIXES:
            images.append(target)
        else:
            raise DatasetError(f"{yaml_path}: image source not found: {target}")
    return images


def _read_image_list(list_path: Path) -> list[Path]:
    """Image paths from a .txt list; relative lines are relative to the list file's folder."""
    images = []
    for line in list_path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            path = Path(line).expanduser()
            images.append(path if path.is_absolute() else (list_path.parent / path))
    return [Path(os.path.normpath(p)) for p in images]


def _yaml_in_dir(folder: Path) -> Path:
    for name in (f"{folder.name}.yaml", "data.yaml", "dataset.yaml"):
        if (folder / name).is_file():
            return folder / name
    raise DatasetError(f"{folder} holds no dataset YAML ({folder.name}.yaml or data.yaml)")


def _resolve_coco128(split: str) -> DatasetSpec:
    """coco128 is never downloaded: it must already sit under the datasets dir."""
    folder = datasets_dir() / "coco128"
    if (folder / "coco128.yaml").is_file():
        return load_dataset_yaml(folder / "coco128.yaml", split=split)
    if not (folder / "images" / "train2017").is_dir():
        raise DatasetError(
            f"dataset 'coco128' is not on disk: put it at {folder} "
            "(images/train2017/*.jpg and labels/train2017/*.txt), "
            "or pass the path of a dataset YAML",
            hint=f"set {DATASETS_ENV} to use another datasets folder",
        )
    raw: dict[str, object] = {
        "path": str(folder),
        "train": "images/train2017",
        "val": "images/train2017",  # coco128 validates on its own training images
        "names": list(_COCO_NAMES),
    }
    return _spec_from_mapping(raw, yaml_path=folder / "coco128.yaml", split=split)
