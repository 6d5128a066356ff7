"""Cache files as the cache itself writes and reads them (sealed), for tests that plant an
entry to see what a check behind the seal does with it, or read what a run stored."""

from __future__ import annotations

from libreyolo.cache_file import read_entries, write_entries


def plant(name: str, entries: dict[str, object], *, subfolder: str | None = None) -> None:
    """Write `entries` into the cache file `name`, sealed as the cache writes them."""
    write_entries(name, entries, sort_keys=False, subfolder=subfolder)


def stored(name: str, *, subfolder: str | None = None) -> dict[str, object]:
    """The entries of the cache file `name`, read through its seal ({} when unsealed)."""
    return read_entries(name, subfolder=subfolder)
