"""Label parsing, image checks and the skip/refuse policy of YoloDataset."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from PIL import Image

from libreyolo.errors import DatasetError
from libreyolo.workload.data.augment import AugmentConfig
from libreyolo.workload.data.dataset import YoloDataset, check_image, parse_label_file
from libreyolo.workload.data.dataset_config import DatasetSpec, load_dataset_yaml

GOOD_ROW = "1 0.5 0.5 0.5 0.25\n"


def _dataset(root: Path, labels: list[str | None], size: tuple[int, int] = (80, 40)) -> DatasetSpec:
    """A tiny YOLO dataset: one JPEG per entry, with that label text (None: no label file)."""
    (root / "images" / "train").mkdir(parents=True)
    (root / "labels" / "train").mkdir(parents=True)
    for i, text in enumerate(labels):
        Image.new("RGB", size, (30 * i % 255, 60, 90)).save(root / "images" / "train" / f"{i}.jpg")
        if text is not None:
            (root / "labels" / "train" / f"{i}.txt").write_text(text, encoding="utf-8")
    (root / "d.yaml").write_text("train: images/train\nnames: [a, b, c]\n", encoding="utf-8")
    return load_dataset_yaml(root / "d.yaml")


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_parse_label_file_reads_boxes_and_polygons(tmp_path: Path) -> None:
    label = tmp_path / "x.txt"
    label.write_text(GOOD_ROW + "\n2 0.1 0.2 0.3 0.2 0.2 0.6\n0 0.5 0.5 0 0.1\n", encoding="utf-8")
    rows, issues = parse_label_file(label, 3)
    assert issues == []
    assert rows == [
        (1, 0.25, 0.375, 0.75, 0.625),
        (2, pytest.approx(0.1), pytest.approx(0.2), pytest.approx(0.3), pytest.approx(0.6)),
    ]  # the zero-width row is dropped silently
    assert parse_label_file(tmp_path / "missing.txt", 3) == ([], [])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "1 0.5 0.5 0.5",
            "expected 5 values (class cx cy w h) or a polygon of >= 3 points, got 4 values",
        ),
        (
            "1 0.5 0.5 0.5 0.5 0.5",
            "expected 5 values (class cx cy w h) or a polygon of >= 3 points, got 6 values",
        ),
        ("1 0.5 abc 0.5 0.5", "non-numeric value in '1 0.5 abc 0.5 0.5'"),
        ("1 0.5 nan 0.5 0.5", "non-finite value in '1 0.5 nan 0.5 0.5'"),
        ("3 0.5 0.5 0.5 0.5", "class 3 out of range [0, 3)"),
        ("-1 0.5 0.5 0.5 0.5", "class -1 out of range [0, 3)"),
        ("1.5 0.5 0.5 0.5 0.5", "class 1.5 is not an integer"),
        ("1 0.5 0.5 1.5 0.5", "coordinates must be normalised to [0, 1], got 0.5 0.5 1.5 0.5"),
        ("1 0.5 -0.2 0.5 0.5", "coordinates must be normalised to [0, 1], got 0.5 -0.2 0.5 0.5"),
    ],
)
def test_malformed_rows_are_reported_with_file_and_line(
    tmp_path: Path, line: str, message: str
) -> None:
    label = tmp_path / "x.txt"
    label.write_text(GOOD_ROW + line + "\n" + GOOD_ROW, encoding="utf-8")
    rows, issues = parse_label_file(label, 3)
    assert len(rows) == 2
    assert issues == [f"{label}:2: {message}"]


def test_bad_label_row_is_skipped_and_recorded(tmp_path: Path) -> None:
    spec = _dataset(tmp_path, [GOOD_ROW, "7 0.5 0.5 0.2 0.2\n" + GOOD_ROW, None])
    dataset = YoloDataset(spec, 64, AugmentConfig.none())
    assert len(dataset) == 3 and dataset.num_boxes == 2
    assert dataset.issues == [f"{spec.label_paths[1]}:1: class 7 out of range [0, 3)"]
    assert len(dataset[2].boxes) == 0  # a missing label file is a background image


def test_bad_label_row_is_refused_with_file_and_line(tmp_path: Path) -> None:
    spec = _dataset(tmp_path, [GOOD_ROW, GOOD_ROW + "1 0.5 x 0.5 0.5\n1 2 0.5 0.5 0.5\n"])
    with pytest.raises(DatasetError) as info:
        YoloDataset(spec, 64, on_bad="refuse")
    assert info.value.message == (
        f"refusing the dataset: {spec.label_paths[1]}:2: non-numeric value in '1 0.5 x 0.5 0.5'"
        " (and 1 more problem)"
    )
    assert info.value.hint == "fix or remove the bad files, or skip them (on_bad='skip')"


def test_truncated_jpeg_is_skipped_or_refused(tmp_path: Path) -> None:
    spec = _dataset(tmp_path, [GOOD_ROW, GOOD_ROW, GOOD_ROW], size=(256, 256))
    bad = spec.image_paths[1]
    _truncate(bad)
    problem = check_image(bad)
    assert problem is not None and problem.startswith(f"{bad}: corrupt image (")
    dataset = YoloDataset(spec, 64, AugmentConfig.none())
    assert len(dataset) == 2 and dataset.issues == [problem]
    with pytest.raises(DatasetError) as info:
        YoloDataset(spec, 64, on_bad="refuse")
    assert info.value.message == f"refusing the dataset: {problem}"


def test_unreadable_image_is_reported(tmp_path: Path) -> None:
    spec = _dataset(tmp_path, [GOOD_ROW, GOOD_ROW])
    spec.image_paths[0].write_bytes(b"not an image at all")
    dataset = YoloDataset(spec, 64)
    assert len(dataset) == 1
    assert dataset.issues[0].startswith(f"{spec.image_paths[0]}: unreadable image (")


def test_jpeg_with_trailing_bytes_is_accepted(tmp_path: Path) -> None:
    spec = _dataset(tmp_path, [GOOD_ROW])
    with spec.image_paths[0].open("ab") as fh:
        fh.write(b"\x00trailer")
    assert check_image(spec.image_paths[0]) is None


def test_image_breaking_after_the_scan_never_ends_a_skip_run(tmp_path: Path) -> None:
    spec = _dataset(tmp_path, [GOOD_ROW, GOOD_ROW, GOOD_ROW], size=(256, 256))
    skipping = YoloDataset(spec, 64, AugmentConfig.none())
    refusing = YoloDataset(spec, 64, AugmentConfig.none(), on_bad="refuse")
    _truncate(spec.image_paths[0])
    sample = skipping[0]
    assert sample.path == str(spec.image_paths[1])
    assert skipping.issues[0].startswith(f"{spec.image_paths[0]}: corrupt image (")
    mosaic = YoloDataset(spec, 64, AugmentConfig(), seed=0)
    assert all(mosaic[i].image.shape == (3, 64, 64) for i in range(1, 3))
    with pytest.raises(DatasetError, match=r"refusing the dataset: .*corrupt image"):
        refusing[0]


def test_dataset_without_any_label_file_is_refused(tmp_path: Path) -> None:
    spec = _dataset(tmp_path, [None, None])
    with pytest.raises(DatasetError, match="no label files found for the 2 train images"):
        YoloDataset(spec, 64)


def test_dataset_with_only_bad_images_is_refused(tmp_path: Path) -> None:
    spec = _dataset(tmp_path, [GOOD_ROW])
    spec.image_paths[0].write_bytes(b"junk")
    with pytest.raises(DatasetError, match="no usable image in"):
        YoloDataset(spec, 64)


def test_item_is_letterboxed_with_boxes_in_input_pixels(tmp_path: Path) -> None:
    spec = _dataset(tmp_path, [GOOD_ROW], size=(80, 40))
    sample = YoloDataset(spec, 64, AugmentConfig.none(pad="center"))[0]
    assert sample.image.dtype == torch.uint8 and sample.image.shape == (3, 64, 64)
    # 80x40 -> 64x32, centred: 16 px of padding on top; the row is cx .5 cy .5 w .5 h .25.
    assert sample.boxes.tolist() == [[16.0, 28.0, 48.0, 36.0]]
    assert sample.classes.tolist() == [1] and sample.classes.dtype == torch.int64
    assert sample.image[:, 0, 0].tolist() == [114, 114, 114]


def test_cached_dataset_gives_the_same_samples_without_touching_the_files(tmp_path: Path) -> None:
    spec = _dataset(tmp_path, [GOOD_ROW, GOOD_ROW, "0 0.2 0.3 0.2 0.2\n"], size=(300, 200))
    plain = YoloDataset(spec, 96, AugmentConfig(), seed=3)
    expected = [plain[i] for i in range(len(plain))]
    cached = YoloDataset(spec, 96, AugmentConfig(), seed=3, cache=True)
    for path in spec.image_paths:  # the cache holds decoded images: the files are not read again
        path.write_bytes(b"")
    for i, a in enumerate(expected):
        b = cached[i]
        assert torch.equal(a.image, b.image) and torch.equal(a.boxes, b.boxes)
        assert torch.equal(a.classes, b.classes) and a.path == b.path
    assert cached.issues == []


def test_cache_leaves_a_bad_image_to_the_bad_file_policy(tmp_path: Path) -> None:
    spec = _dataset(tmp_path, [GOOD_ROW, GOOD_ROW], size=(256, 256))
    _truncate(spec.image_paths[0])
    cached = YoloDataset(spec, 64, AugmentConfig.none(), cache=True)
    assert len(cached) == 1 and cached[0].path == str(spec.image_paths[1])
    assert cached.issues[0].startswith(f"{spec.image_paths[0]}: ")
