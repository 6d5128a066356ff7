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

An entry is a file anyone who can write the folder may have edited, so it must also say what
was asked: every override sets a key of the config (`batch=4`, `window.runs=20`, the flags'
own keys) or selects the mode, and the entry holds exactly each override's value, or it is not
used (`reproduces`). A selection of another group (`model=yolox_s`), whose effect only Hydra
knows, is composed every time. Files live in `$LIBREYOLO_CACHE_DIR/configs/`, the newest
`MAX_ENTRIES` of the cache's own (`<32 hex digits>.json`, regular files in a real folder):
nothing is read, written or pruned through a link (`cache_file`), and pruning never touches
another file.

Must not: import Hydra or OmegaConf (skipping them is the point), or instantiate anything.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import msgspec

from libreyolo.cache_file import (
    cache_folder,
    own_files,
    read_entries,
    remove_files,
    stale_temp_files,
    write_entries,
)
from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import ProfileConfig
from libreyolo.document.json_value import JsonObject

CONFIGS_DIR = "configs"
MAX_ENTRIES = 512  # a sweep's points each compose once; the oldest beyond this are removed
MAX_PLUGIN_FILES = 2000  # `.py` files listed per `hydra_plugins` folder
PACKAGE = Path(__file__).resolve().parents[1]
_KEY_VERSION = "1"
_ENTRY = re.compile(r"[0-9a-f]{32}\.json")  # what `config_key` names: the only files pruned
# An override value as `overrides.render_value` writes it: null, a bool, a number, one quoted
# string, or a list of quoted strings (a quote and `${` escaped by a backslash inside one).
_QUOTED = r"'(?:[^'\\]|\\.)*'"
_LIST = re.compile(rf"\[(?:{_QUOTED}(?:,{_QUOTED})*)?\]")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")


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


def cached_config(key: str, overrides: Sequence[str] = ()) -> ProfileConfig | None:
    """The config stored under `key`, when it is exactly what `store_config` writes and holds
    what each of `overrides` asks (`reproduces`)."""
    raw = read_entries(f"{key}.json", subfolder=CONFIGS_DIR).get("config")
    if raw is None:
        return None
    try:
        config = msgspec.convert(raw, ProfileConfig, strict=True)
    except msgspec.ValidationError:
        return None
    # Every field, as the writer wrote it: msgspec leaves a missing field's default to the
    # class, and ignores a field the schema lacks (a `_target_`).
    if as_plain_dict(config) != raw or not reproduces(raw, overrides):
        return None
    return config


def cacheable(overrides: Sequence[str]) -> bool:
    """Whether a cached compose of `overrides` can be checked against them: each sets a key
    (or the mode) to a value written as `render_value` writes it."""
    return all(_asked(text) is not None for text in overrides)


def reproduces(plain: JsonObject, overrides: Sequence[str]) -> bool:
    """Whether the config `plain` holds exactly what each of `overrides` asks."""
    for text in overrides:
        asked = _asked(text)
        if asked is None:
            return False
        path, value = asked
        node: object = plain
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        if node != value or isinstance(node, bool) != isinstance(value, bool):
            return False
    return True


def _asked(text: str) -> tuple[list[str], object] | None:
    """(key path, value) of one override, or None when it is not `key=value` in the form
    `render_value` writes: a group selection (`model=yolox_s`) names its option unquoted, so
    only the mode's is one."""
    key, eq, value = text.partition("=")
    if not eq or not re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*", key):
        return None
    if key == "mode":
        return ([key], value) if value in ("run", "infer") else None
    parsed = _value(value)
    return None if parsed is _UNPARSED else (key.split("."), parsed)


_UNPARSED = object()


def _value(text: str) -> object:
    if text in ("null", "true", "false"):
        return {"null": None, "true": True, "false": False}[text]
    if _NUMBER.fullmatch(text):
        return float(text) if any(c in text for c in ".eE") else int(text)
    if re.fullmatch(_QUOTED, text):
        return _unquote(text)
    if _LIST.fullmatch(text):
        return [_unquote(item) for item in re.findall(_QUOTED, text)]
    return _UNPARSED


def _unquote(quoted: str) -> str:
    """The inverse of `overrides.quote_value`: a run of backslashes before a quote, before
    `${` or at the end was doubled and the quote or `${` escaped; other backslashes are
    literal."""

    def unescape(match: re.Match[str]) -> str:
        return "\\" * (len(match.group(1)) // 2) + match.group(2)

    return re.sub(r"(\\*)('|\$\{|\Z)", unescape, quoted[1:-1])


def store_config(key: str, config: ProfileConfig) -> None:
    """`config` kept under `key`; past `MAX_ENTRIES` files, the oldest are removed."""
    write_entries(f"{key}.json", {"config": as_plain_dict(config)}, subfolder=CONFIGS_DIR)
    with cache_folder(CONFIGS_DIR) as folder:
        if folder is not None:
            _prune(folder)


def _prune(folder: int) -> None:
    entries = own_files(folder, _ENTRY)
    oldest = [entry.name for entry in entries[: max(0, len(entries) - MAX_ENTRIES)]]
    remove_files(folder, [*oldest, *stale_temp_files(folder)])
