"""The synthetic dataset: deterministic bytes, exact labels, cached and written atomically."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from PIL import Image

from libreyolo.errors import UsageError
from libreyolo.workload.data import synthetic
from libreyolo.workload.data.synthetic import CLASS_NAMES, make_synthetic, render_sample

SMALL = {"num_train": 6, "num_val": 2, "imgsz": 64}
_COLOURS = {0: (220, 40, 40), 1: (40, 190, 60), 2: (40, 70, 220)}


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    a = make_synthetic(tmp_path / "a", seed=7, **SMALL).parent
    b = make_synthetic(tmp_path / "b", seed=7, **SMALL).parent
    c = make_synthetic(tmp_path / "c", seed=8, **SMALL).parent
    assert _files(a) == _files(b)
    assert len(_files(a)) == 2 * (6 + 2) + 1
    assert _files(a) != _files(c)


def test_yaml_layout_and_cache_key(tmp_path: Path) -> None:
    yaml_path = make_synthetic(tmp_path, seed=1, **SMALL)
    assert yaml_path.parent.name == "synthetic-v1-train6-val2-64px-seed1"
    text = yaml_path.read_text(encoding="utf-8")
    assert "path: .\ntrain: images/train\nval: images/val\nnc: 3\n" in text
    assert "  0: red\n  1: green\n  2: blue\n" in text
    with Image.open(yaml_path.parent / "images" / "val" / "000001.jpg") as image:
        assert (image.format, image.size) == ("JPEG", (64, 64))


def test_rendered_labels_are_the_exact_extent_of_each_shape() -> None:
    for index in range(20):
        image, boxes = render_sample(random.Random(index), 96)
        assert 1 <= len(boxes) <= 4
        pixels = image.load()
        assert pixels is not None
        for cls, x1, y1, x2, y2 in boxes:
            colour = _COLOURS[cls]
            # Shapes keep a gap, so a 1-px margin around a box holds only this shape's pixels.
            lo_x, lo_y, hi_x, hi_y = (
                max(0, x1 - 1),
                max(0, y1 - 1),
                min(96, x2 + 1),
                min(96, y2 + 1),
            )
            hits = [
                (x, y)
                for x in range(lo_x, hi_x)
                for y in range(lo_y, hi_y)
                if pixels[x, y] == colour
            ]
            xs, ys = [x for x, _ in hits], [y for _, y in hits]
            assert (min(xs), min(ys), max(xs) + 1, max(ys) + 1) == (x1, y1, x2, y2)


def test_label_files_match_the_jpeg_content(tmp_path: Path) -> None:
    root = make_synthetic(tmp_path, seed=3, **SMALL).parent
    for label in sorted((root / "labels" / "train").glob("*.txt")):
        with Image.open(root / "images" / "train" / f"{label.stem}.jpg") as image:
            rgb = image.convert("RGB")
        rows = [line.split() for line in label.read_text(encoding="utf-8").splitlines()]
        assert rows
        for cls, cx, cy, _, _ in rows:
            centre = rgb.getpixel((int(float(cx) * 64), int(float(cy) * 64)))
            assert isinstance(centre, tuple)
            expected = _COLOURS[int(cls)]
            assert sum(abs(a - b) for a, b in zip(centre, expected, strict=True)) < 60
    assert len(CLASS_NAMES) == 3


def test_generation_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = make_synthetic(tmp_path, **SMALL)

    def fail(*_args: object) -> None:
        raise AssertionError("regenerated a cached set")

    monkeypatch.setattr(synthetic, "_write_split", fail)
    assert make_synthetic(tmp_path, **SMALL) == first


def test_interrupted_generation_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = synthetic._write_split

    def interrupted(root: Path, split: str, *args: int) -> None:
        real(root, split, *args)
        if split == "val":
            raise KeyboardInterrupt

    monkeypatch.setattr(synthetic, "_write_split", interrupted)
    with pytest.raises(KeyboardInterrupt):
        make_synthetic(tmp_path, **SMALL)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(synthetic, "_write_split", real)
    assert make_synthetic(tmp_path, **SMALL).is_file()


def test_bad_parameters_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        make_synthetic(tmp_path, num_train=0)
    with pytest.raises(UsageError):
        make_synthetic(tmp_path, imgsz=16)
