"""The synthetic dataset: deterministic bytes, exact labels, cached and written atomically."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def test_no_set_is_larger_than_the_largest_we_draw() -> None:
    assert synthetic.train_images_for(64, 64) == synthetic.MAX_TRAIN_IMAGES == 4096
    assert synthetic.train_images_for(4, 100_000) == 4096
    assert synthetic.train_images_for(35, 116) == 4096  # 4060 rounds up to 4096, not 4160


def test_a_window_the_largest_set_cannot_hold_is_refused_with_the_numbers() -> None:
    with pytest.raises(UsageError) as info:
        synthetic.check_window_images(2, 100_000)
    assert info.value.message == (
        "the synthetic dataset holds at most 4096 images, but 2 measured steps of --batch "
        "100000 need 200000 in one epoch"
    )
    assert info.value.hint == "lower --batch or --steps"
    synthetic.check_window_images(4, 1024)  # exactly the largest set
    with pytest.raises(UsageError, match="1 measured steps of --batch 4097 need 4097"):
        synthetic.check_window_images(1, 4097)


def test_pending_draw_names_the_folder_until_the_set_is_cached(tmp_path: Path) -> None:
    folder = synthetic.pending_draw(tmp_path, 64)
    assert folder == tmp_path / "synthetic-v1-train64-val16-320px-seed0"
    assert make_synthetic(tmp_path, num_train=64).parent == folder
    assert synthetic.pending_draw(tmp_path, 64) is None
    assert synthetic.pending_draw(tmp_path, 128) == tmp_path / (
        "synthetic-v1-train128-val16-320px-seed0"
    )


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _staging(root: Path, pid: int, tag: str) -> Path:
    folder = root / f".synthetic-v1-train6-val2-64px-seed0.partial-{pid}-{tag}"
    (folder / "images" / "train").mkdir(parents=True)
    (folder / "images" / "train" / "000000.jpg").write_bytes(b"\xff\xd8")
    return folder


def test_the_next_generation_removes_staging_folders_of_dead_generations_only(
    tmp_path: Path,
) -> None:
    fcntl = pytest.importorskip("fcntl")
    dead = _dead_pid()
    abandoned = _staging(tmp_path, dead, "0123abcd")
    running = _staging(tmp_path, os.getpid(), "89abcdef")  # a live pid: still drawing
    locked = _staging(tmp_path, dead, "deadbeef")  # its owner lives in another pid namespace
    older = tmp_path / ".synthetic-v1-train64-val16-320px-seed0.fl6qrl10"  # no pid to judge
    older.mkdir()
    users = tmp_path / f"notes.partial-{dead}-00000000"
    users.mkdir()
    fd = os.open(locked, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        make_synthetic(tmp_path, **SMALL)
    finally:
        os.close(fd)
    assert not abandoned.exists()
    assert running.is_dir() and locked.is_dir() and older.is_dir() and users.is_dir()


def test_a_generation_draws_in_a_staging_folder_named_with_its_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, seen = synthetic._write_split, []

    def spy(root: Path, *args: Any) -> None:
        seen.append(root.name)
        real(root, *args)

    monkeypatch.setattr(synthetic, "_write_split", spy)
    make_synthetic(tmp_path, **SMALL)
    pattern = rf"\.synthetic-v1-train6-val2-64px-seed0\.partial-{os.getpid()}-[0-9a-f]{{8}}"
    assert len(seen) == 2 and re.fullmatch(pattern, seen[0]) and seen[0] == seen[1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["synthetic-v1-train6-val2-64px-seed0"]
