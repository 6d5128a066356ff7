"""The checked-in fixtures: complete, decompressed intact, cached safely, never looked up outside
the repository (tests/fixture_files.py)."""

from __future__ import annotations

import hashlib
import lzma
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import fixture_files
from tests.fixture_files import FIXTURES, YOLO9T, YOLOX_N, fixture_dir, fixture_file

TESTS = Path(__file__).resolve().parent
# sha256 of the files libreyolo 1.6.0 wrote, as they were handed to this project.
ORIGINALS = {
    YOLO9T: "cf364b2e6b28a84574c6dcabe1ce032af5050e60eed6acac826d6fb3c4fb9e70",
    YOLOX_N: "272887e1ff18f0eeaf1f064e820e5f2227b900c4878f6101e3850eae02c4841f",
    "libreyolo_v1_checkpoints/LibreYOLO9t_nc80_seed0.expected.npz": (
        "a6a7960078133b583bd71a0761bf61fe98f10b413100bdbbb71e81ba7fe6aea4"
    ),
    "libreyolo_v1_yolox/LibreYOLOXn_nc80_seed0.expected.npz": (
        "ee43b3caef365991d4191dd3997284d111b89182b545a71a029e2810d267f82b"
    ),
}
# What used to reach fixtures outside the repository, and the guards that skipped without them.
OUTSIDE = re.compile(r"parents\[\d\]\.parent\b|ROOT\.parent\b|\"shared\"|shared/fixtures")
SKIP_IF_ABSENT = re.compile(
    r"skip(if)?\((not [^)]*\.is_(file|dir)\(\)|[^)]*(not found|absent|missing))"
)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("relative", sorted(ORIGINALS))
def test_each_compressed_fixture_decompresses_to_the_original_bytes(relative: str) -> None:
    path = fixture_file(relative)
    assert path.name == relative.rpartition("/")[2]
    assert _sha256(path) == ORIGINALS[relative]


def test_a_checkpoint_keeps_its_expected_outputs_beside_it() -> None:
    for relative in (YOLO9T, YOLOX_N):
        checkpoint = fixture_file(relative)
        assert checkpoint.with_suffix(".expected.npz").is_file()
        assert (checkpoint.parent / "README.md").is_file()


def test_a_folder_with_nothing_compressed_is_the_folder_itself() -> None:
    assert fixture_dir("gpu_traces") == FIXTURES / "gpu_traces"
    assert fixture_dir("reference_v1") == FIXTURES / "reference_v1"
    traces = sorted(path.name for path in fixture_dir("gpu_traces").glob("*.json.gz"))
    assert len(traces) == 4
    licences = {"LICENSE.HolisticTraceAnalysis.txt", "LICENSE.TraceLens.txt"}
    assert licences <= {path.name for path in (FIXTURES / "gpu_traces").iterdir()}


def test_a_missing_fixture_is_an_error_not_a_skip() -> None:
    with pytest.raises(FileNotFoundError, match=r"^test fixture gpu_traces/none\.json\.gz "):
        fixture_file("gpu_traces/none.json.gz")
    with pytest.raises(FileNotFoundError, match=r"^test fixture folder nowhere is not in "):
        fixture_dir("nowhere")


# --- the cache, on a fixture folder made here ----------------------------------------------


@pytest.fixture
def own_fixtures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """`tests/fixtures` and the system temp folder both moved into tmp_path."""
    root = tmp_path / "fixtures"
    (root / "demo").mkdir(parents=True)
    (root / "demo" / "a.txt.xz").write_bytes(lzma.compress(b"alpha\n"))
    (root / "demo" / "b.txt").write_bytes(b"beta\n")
    monkeypatch.setattr(fixture_files, "FIXTURES", root)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    fixture_dir.cache_clear()
    yield root
    fixture_dir.cache_clear()


def test_a_compressed_folder_is_decompressed_once_into_a_read_only_copy(
    own_fixtures: Path, tmp_path: Path
) -> None:
    folder = fixture_dir("demo")
    assert folder.name == "demo" and folder.is_relative_to(tmp_path / "tmp")
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == {
        "a.txt": b"alpha\n",
        "b.txt": b"beta\n",
    }
    assert all(path.stat().st_mode & 0o222 == 0 for path in folder.iterdir())
    fixture_dir.cache_clear()
    assert fixture_dir("demo") == folder  # a second session finds the same copy
    assert [path.name for path in folder.parent.parent.iterdir()] == [folder.parent.name]


def test_a_changed_fixture_gets_a_fresh_copy(own_fixtures: Path) -> None:
    before = fixture_dir("demo")
    (own_fixtures / "demo" / "a.txt.xz").write_bytes(lzma.compress(b"changed\n"))
    fixture_dir.cache_clear()
    after = fixture_dir("demo")
    assert after != before
    assert ((before / "a.txt").read_bytes(), (after / "a.txt").read_bytes()) == (
        b"alpha\n",
        b"changed\n",
    )


def test_losing_the_race_to_publish_keeps_the_winners_copy(own_fixtures: Path) -> None:
    members = sorted((own_fixtures / "demo").iterdir())
    version = fixture_dir("demo").parent  # another process published these bytes first
    fixture_files._publish(members, version, "demo")  # our rename fails: not an error
    assert sorted(path.name for path in version.parent.iterdir()) == [version.name]
    assert (version / "demo" / "a.txt").read_bytes() == b"alpha\n"


# --- every test finds its fixtures this way ------------------------------------------------


def _test_sources() -> Iterator[tuple[Path, str]]:
    for path in sorted(TESTS.rglob("*.py")):
        if path != Path(__file__).resolve():
            yield path, path.read_text(encoding="utf-8")


def test_no_test_reads_fixtures_from_outside_the_repository() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{number}: {line.strip()}"
        for path, text in _test_sources()
        for number, line in enumerate(text.splitlines(), 1)
        if OUTSIDE.search(line) or SKIP_IF_ABSENT.search(line)
    ]
    assert found == []
