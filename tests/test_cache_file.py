"""The per-machine cache folder is used only when it is this user's own and nobody else may
write it: a folder someone else controls could hold planted entries. Such a folder is not
read, not written and not pruned, and every run notes why."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import torch

from libreyolo.cache_file import (
    CACHE_DIR_ENV,
    SEAL_KEY_NAME,
    cache_folder,
    cache_problem,
    read_entries,
    write_entries,
)
from libreyolo.measure import gemm_peak
from libreyolo.measure.compute import device_peaks
from libreyolo.measure.gemm_peak import GemmRun


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_new_cache_folder_is_private(folder: Path) -> None:
    assert cache_problem() is None and read_entries("a.json") == {}
    assert not folder.exists()  # reading makes nothing
    write_entries("a.json", {"k": 1})
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert read_entries("a.json") == {"k": 1}


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_a_folder_others_may_write_is_not_used(folder: Path, mode: int) -> None:
    write_entries("a.json", {"k": 1})
    folder.chmod(mode)
    assert cache_problem() == (
        f"the cache folder {folder} is writable by others: not used (chmod go-w {folder} to use it)"
    )
    with cache_folder(create=True) as descriptor:
        assert descriptor is None
    assert read_entries("a.json") == {}
    write_entries("b.json", {"k": 2})
    assert sorted(p.name for p in folder.iterdir()) == ["a.json", SEAL_KEY_NAME]


def test_another_users_folder_is_not_used(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_entries("a.json", {"k": 1})
    monkeypatch.setattr(os, "getuid", lambda: folder.stat().st_uid + 1)
    assert cache_problem() == f"the cache folder {folder} belongs to another user: not used"
    assert read_entries("a.json") == {}


def test_a_file_where_the_folder_goes_is_not_used(folder: Path) -> None:
    folder.write_text("not a folder")
    assert cache_problem() == f"the cache {folder} is not a folder: not used"
    write_entries("a.json", {"k": 1})
    assert folder.read_text() == "not a folder"


def test_every_run_notes_a_cache_it_could_not_use(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    monkeypatch.setattr(
        gemm_peak,
        "calibrate",
        lambda device, dtype: GemmRun(0.1, 64, 5, 3.0, contended=False),
    )
    notes: list[str] = []
    (peak,) = device_peaks(torch.device("cpu"), "a CPU", "fp32", notes)
    assert peak.cached is False and list(folder.iterdir()) == []
    assert notes == [cache_problem()]
