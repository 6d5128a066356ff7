"""Composed configs kept across runs: composing the packaged configs through Hydra takes 0.5-0.8 s
on a 2-core host (its plugin scan, the defaults tree, OmegaConf's merges and Hydra's own import),
more than anything else the README's main job does outside its window, and the same flags over
the same files compose the same config.

Role: `config_key` hashes everything a packaged compose reads: the override strings in their
order, the primary config's name, every packaged YAML file (path and bytes), the code that
composes and its schema (`libreyolo/config/*.py`, `defaults.py`), Hydra's and OmegaConf's own
files that carry their versions, the `.py` files of every `hydra_plugins` folder on the path
(path, size, mtime: a plugin may add a search path) and Python's version. No key, so a compose
every time, for an override that names `hydra` (its search path reads other folders) or
interpolates (`${oc.env:...}` reads the environment); a `--config-dir` (a user's files) is
never cached by the caller. An entry is plain JSON converted back into the frozen dataclasses,
strictly, and kept only when it converts back to exactly the same JSON: anything else (a type,
an unknown field, a `_target_`) is composed again and replaced, never trusted, never fatal.
Files live in `$LIBREYOLO_CACHE_DIR/configs/`, the newest `MAX_ENTRIES`.

Must not: import Hydra or OmegaConf (skipping them is the point), or instantiate anything.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import msgspec

from libreyolo.cache_file import cache_dir, read_entries, write_entries
from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import ProfileConfig

CONFIGS_DIR = "configs"
MAX_ENTRIES = 512  # a sweep's points each compose once; the oldest beyond this are removed
MAX_PLUGIN_FILES = 2000  # `.py` files listed per `hydra_plugins` folder
PACKAGE = Path(__file__).resolve().parents[1]
_KEY_VERSION = "1"


def config_key(overrides: Sequence[str], config_name: str) -> str | None:
    """The hash naming the packaged compose of `config_name` with `overrides`, or None when
    that compose reads something the key cannot see."""
    if any("${" in item or item.lstrip("+~").startswith("hydra") for item in overrides):
        return None
    library_files = _library_files()
    if library_files is None:
        return None
    digest = hashlib.sha256()
    for part in (_KEY_VERSION, sys.version, config_name, len(overrides), *overrides):
        digest.update(f"{part}\0".encode())
    try:
        for path in [*_own_files(), *library_files]:
            digest.update(f"{path}\0".encode())
            digest.update(path.read_bytes())
        for line in _plugin_files():
            digest.update(f"{line}\0".encode())
    except OSError:  # a file gone or unreadable while listed (an install under way)
        return None
    return digest.hexdigest()[:32]


def _own_files() -> list[Path]:
    conf = sorted((PACKAGE / "conf").rglob("*.yaml"))
    return [*conf, *sorted((PACKAGE / "config").glob("*.py")), PACKAGE / "defaults.py"]


def _library_files() -> list[Path] | None:
    """Hydra's `__init__.py` (its `__version__`) and OmegaConf's `version.py`, found without
    importing either; None when one is not installed as files."""
    found = []
    for package, name in (("hydra", "__init__.py"), ("omegaconf", "version.py")):
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            return None
        path = Path(spec.origin).with_name(name)
        if not path.is_file():
            return None
        found.append(path)
    return found


def _plugin_files() -> Iterator[str]:
    spec = importlib.util.find_spec("hydra_plugins")
    folders = [] if spec is None else list(spec.submodule_search_locations or [])
    for folder in sorted(folders):
        listed = sorted(Path(folder).rglob("*.py"))[:MAX_PLUGIN_FILES]
        for path in listed:
            found = path.stat()
            yield f"{path}\0{found.st_size}\0{found.st_mtime_ns}"


def _entry_name(key: str) -> str:
    return f"{CONFIGS_DIR}/{key}.json"


def cached_config(key: str) -> ProfileConfig | None:
    """The config stored under `key`, when it is exactly what `store_config` writes."""
    raw = read_entries(_entry_name(key)).get("config")
    if raw is None:
        return None
    try:
        config = msgspec.convert(raw, ProfileConfig, strict=True)
    except msgspec.ValidationError:
        return None
    # Every field, as the writer wrote it: msgspec leaves a missing field's default to the
    # class, and ignores a field the schema lacks (a `_target_`).
    return config if as_plain_dict(config) == raw else None


def store_config(key: str, config: ProfileConfig) -> None:
    """`config` kept under `key`; past `MAX_ENTRIES` files, the oldest are removed."""
    write_entries(_entry_name(key), {"config": as_plain_dict(config)})
    _prune(cache_dir() / CONFIGS_DIR)


def _prune(folder: Path) -> None:
    try:
        with os.scandir(folder) as listing:
            entries = [(e.stat().st_mtime_ns, e.path) for e in listing if e.name.endswith(".json")]
    except OSError:
        return
    for _, path in sorted(entries)[: max(0, len(entries) - MAX_ENTRIES)]:
        with contextlib.suppress(OSError):  # another process removed it first
            os.unlink(path)
