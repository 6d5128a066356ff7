"""Every cache entry file is sealed with the cache's own secret: an entry edited by hand or by
another program, one copied under another entry's name or into another folder, or one written
before seals is not read, so a poisoned entry can never stand for what this tool computed."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from libreyolo import cache_file
from libreyolo.cache_file import (
    CACHE_DIR_ENV,
    SEAL_KEY_BYTES,
    SEAL_KEY_NAME,
    cache_problem,
    read_entries,
    write_entries,
)
from libreyolo.config import compose as compose_module
from libreyolo.config import compose_config, to_overrides
from libreyolo.config.compose_cache import CONFIGS_DIR, config_key

ENTRIES: dict[str, object] = {"b": 1, "a": {"x": [1.5, None, "é"]}}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_an_entry_reads_back_as_written_and_the_key_is_private(cache: Path) -> None:
    write_entries("x.json", ENTRIES, sort_keys=False)
    assert read_entries("x.json") == ENTRIES
    assert list(read_entries("x.json")) == ["b", "a"]  # its own order kept
    key = cache / SEAL_KEY_NAME
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == SEAL_KEY_BYTES


def test_an_edited_entry_is_not_read(cache: Path) -> None:
    write_entries("x.json", ENTRIES)
    _edit(cache / "x.json", '"b": 1', '"b": 2')
    assert read_entries("x.json") == {}


@pytest.mark.parametrize("to", ["y.json", "configs/x.json"], ids=["renamed", "moved"])
def test_an_entry_under_another_name_or_folder_is_not_read(cache: Path, to: str) -> None:
    write_entries("x.json", ENTRIES)
    (cache / "configs").mkdir(mode=0o700)
    (cache / to).write_bytes((cache / "x.json").read_bytes())
    name, subfolder = (to, None) if "/" not in to else (to.split("/")[1], CONFIGS_DIR)
    assert read_entries(name, subfolder=subfolder) == {}


def test_an_entry_written_before_seals_is_not_read(cache: Path) -> None:
    write_entries("other.json", {})  # the cache and its key exist
    (cache / "x.json").write_text(json.dumps(ENTRIES))  # the format before seals
    assert read_entries("x.json") == {}


def test_a_key_of_the_wrong_size_is_replaced_and_unseals_every_entry(cache: Path) -> None:
    write_entries("x.json", ENTRIES)
    (cache / SEAL_KEY_NAME).write_bytes(b"short")
    assert read_entries("x.json") == {}
    write_entries("y.json", ENTRIES)
    assert read_entries("y.json") == ENTRIES and read_entries("x.json") == {}
    assert len((cache / SEAL_KEY_NAME).read_bytes()) == SEAL_KEY_BYTES


def test_a_linked_key_is_not_used_and_the_run_says_so(cache: Path, tmp_path: Path) -> None:
    theirs = tmp_path / "their.key"
    theirs.write_bytes(b"k" * SEAL_KEY_BYTES)
    cache.mkdir(mode=0o700)
    (cache / SEAL_KEY_NAME).symlink_to(theirs)
    write_entries("x.json", ENTRIES)  # no key of its own: nothing sealed, nothing written
    assert read_entries("x.json") == {} and not (cache / "x.json").exists()
    assert theirs.read_bytes() == b"k" * SEAL_KEY_BYTES
    assert cache_problem() == (
        f"symbolic links in the cache folder {cache} are not used (nothing is read or "
        f"written through them): {SEAL_KEY_NAME}"
    )


def test_an_edited_default_in_a_cached_config_is_composed_past(cache: Path) -> None:
    # The typed flags are all held, so only the seal tells: the edit changes a default.
    typed = to_overrides({"device": "cpu"}, mode="infer")
    composed = compose_config(typed)  # composed through Hydra, and cached
    key = config_key(typed, "profile")
    assert key is not None
    entry = cache / CONFIGS_DIR / f"{key}.json"
    warmup = composed.window.warmup
    _edit(entry, f'"warmup": {warmup}', f'"warmup": {warmup + 40}')
    again = compose_config(typed)
    assert again.window.warmup == warmup
    assert again == compose_module._composed(typed, None, "profile")
    assert cache_file.read_entries(f"{key}.json", subfolder=CONFIGS_DIR)  # rewritten, sealed
    assert os.access(entry, os.R_OK)
