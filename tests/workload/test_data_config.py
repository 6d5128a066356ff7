"""Dataset YAML forms, path resolution, image listing and the named-dataset registry."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from libreyolo.errors import DatasetError, MissingFileError, UsageError
from libreyolo.workload.data.dataset_config import (
    datasets_dir,
    label_path_for,
    load_dataset_yaml,
    resolve_dataset,
)


@pytest.fixture(autouse=True)
def _datasets_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "datasets"
    monkeypatch.setenv("LIBREYOLO_DATASETS_DIR", str(folder))
    return folder


def _images(folder: Path, count: int, suffix: str = ".jpg") -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        path = folder / f"img{i}{suffix}"
        Image.new("RGB", (8, 8), (i * 40, 0, 0)).save(path)
        paths.append(path)
    return paths


def _yaml(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("names_text", "expected"),
    [
        ("names: [cat, dog]\n", ("cat", "dog")),
        ("names:\n  0: cat\n  1: dog\n", ("cat", "dog")),
        ("names: {'1': dog, '0': cat}\n", ("cat", "dog")),
        ("nc: 3\n", ("class0", "class1", "class2")),
        ("nc: 2\nnames: [cat, dog]\n", ("cat", "dog")),
    ],
)
def test_dataset_yaml_accepts_every_names_form(
    tmp_path: Path, names_text: str, expected: tuple[str, ...]
) -> None:
    _images(tmp_path / "ds" / "images" / "train", 2)
    spec = resolve_dataset(
        str(_yaml(tmp_path / "ds" / "d.yaml", "train: images/train\n" + names_text))
    )
    assert spec.names == expected
    assert spec.nc == len(expected)
    assert spec.yaml_path == (tmp_path / "ds" / "d.yaml").resolve()


@pytest.mark.parametrize(
    ("names_text", "fragment"),
    [
        ("nc: 3\nnames: [a, b]\n", "'nc' is 3 but 'names' lists 2 classes"),
        ("names: {0: a, 2: b}\n", "'names' keys must be exactly 0..1"),
        ("names: 7\n", "'names' must be a list or a dict"),
        ("train_only: 1\n", "needs 'names' (a list or a dict) or 'nc'"),
        ("nc: 0\n", "'nc' must be a positive integer"),
    ],
)
def test_dataset_yaml_rejects_bad_names(tmp_path: Path, names_text: str, fragment: str) -> None:
    _images(tmp_path / "images" / "train", 1)
    path = _yaml(tmp_path / "d.yaml", "train: images/train\n" + names_text)
    with pytest.raises(DatasetError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        load_dataset_yaml(path)


def test_dataset_yaml_path_is_relative_to_the_yaml_folder(tmp_path: Path) -> None:
    images = _images(tmp_path / "data" / "images" / "val", 3)
    path = _yaml(
        tmp_path / "cfg" / "d.yaml", "path: ../data\ntrain: images/val\nval: images/val\nnc: 1\n"
    )
    spec = resolve_dataset(str(path), split="val")
    assert spec.root == (tmp_path / "data").resolve()
    assert [p.name for p in spec.image_paths] == [p.name for p in images]
    assert spec.label_paths[0] == spec.root / "labels" / "val" / "img0.txt"


def test_dataset_yaml_path_falls_back_to_the_datasets_dir(
    tmp_path: Path, _datasets_dir: Path
) -> None:
    _images(_datasets_dir / "mine" / "images" / "train", 2)
    path = _yaml(tmp_path / "cfg" / "d.yaml", "path: mine\ntrain: images/train\nnc: 1\n")
    assert resolve_dataset(str(path)).root == (_datasets_dir / "mine").resolve()


def test_dataset_yaml_without_path_uses_its_folder_and_lists(tmp_path: Path) -> None:
    a = _images(tmp_path / "images" / "a", 2)
    b = _images(tmp_path / "images" / "b", 1, suffix=".png")
    path = _yaml(tmp_path / "d.yaml", "train: [images/a, images/b/img0.png]\nnc: 1\n")
    assert resolve_dataset(str(path)).image_paths == (*a, *b)


def test_txt_list_lines_are_relative_to_the_list_file(tmp_path: Path) -> None:
    images = _images(tmp_path / "ds" / "images" / "train", 3)
    lists = tmp_path / "ds" / "lists"
    lists.mkdir()
    (lists / "train.txt").write_text(
        f"../images/train/img2.jpg\n\n# a comment\n{images[0]}\n", encoding="utf-8"
    )
    path = _yaml(tmp_path / "ds" / "d.yaml", "train: lists/train.txt\nnames: [x]\n")
    assert resolve_dataset(str(path)).image_paths == (images[2], images[0])


def test_directory_with_a_yaml_is_accepted(tmp_path: Path) -> None:
    _images(tmp_path / "ds" / "images" / "train", 1)
    _yaml(tmp_path / "ds" / "data.yaml", "train: images/train\nnc: 1\n")
    assert resolve_dataset(str(tmp_path / "ds")).num_images == 1


def test_label_path_for_swaps_every_images_folder() -> None:
    assert label_path_for(Path("/d/images/train/x.jpeg")) == Path("/d/labels/train/x.txt")
    assert label_path_for(Path("images/a/images/b.png")) == Path("labels/a/labels/b.txt")
    assert label_path_for(Path("/d/myimages/b.png")) == Path("/d/myimages/b.txt")


def test_dataset_without_images_or_split_is_refused(tmp_path: Path) -> None:
    (tmp_path / "images" / "train").mkdir(parents=True)
    path = _yaml(tmp_path / "d.yaml", "train: images/train\nnc: 1\n")
    with pytest.raises(DatasetError, match="no images found for split 'train'"):
        load_dataset_yaml(path)
    with pytest.raises(DatasetError, match="no 'val' entry"):
        load_dataset_yaml(path, split="val")
    missing = _yaml(tmp_path / "m.yaml", "train: nowhere\nnc: 1\n")
    with pytest.raises(DatasetError, match="image source not found"):
        load_dataset_yaml(missing)


def test_missing_yaml_path_is_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError, match="dataset YAML not found"):
        resolve_dataset(str(tmp_path / "nope.yaml"))


def test_unknown_name_lists_the_known_names() -> None:
    with pytest.raises(DatasetError) as info:
        resolve_dataset("coco9000")
    assert info.value.message == "unknown dataset 'coco9000'; known names: coco128, synthetic"
    assert info.value.status == 2


def test_unknown_split_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown dataset split 'dev'"):
        resolve_dataset("synthetic", split="dev")


def test_coco128_missing_says_where_to_put_it(_datasets_dir: Path) -> None:
    with pytest.raises(DatasetError) as info:
        resolve_dataset("coco128")
    assert info.value.message == (
        f"dataset 'coco128' is not on disk: put it at {_datasets_dir / 'coco128'} "
        "(images/train2017/*.jpg and labels/train2017/*.txt), or pass the path of a dataset YAML"
    )
    assert info.value.hint == "set LIBREYOLO_DATASETS_DIR to use another datasets folder"


def test_coco128_on_disk_resolves_with_coco_names(_datasets_dir: Path) -> None:
    _images(_datasets_dir / "coco128" / "images" / "train2017", 2)
    train, val = resolve_dataset("coco128"), resolve_dataset("coco128", split="val")
    assert train.nc == 80 and train.names[0] == "person" and train.names[79] == "toothbrush"
    assert train.image_paths == val.image_paths
    assert train.yaml_path is None


def test_synthetic_name_generates_under_the_datasets_dir(_datasets_dir: Path) -> None:
    assert datasets_dir() == _datasets_dir
    spec = resolve_dataset("synthetic", split="val")
    assert spec.names == ("red", "green", "blue")
    assert spec.num_images == 16
    assert spec.root.parent == _datasets_dir.resolve()
    assert all(p.is_file() for p in spec.label_paths)
