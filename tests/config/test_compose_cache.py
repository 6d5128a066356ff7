"""The machine's cache of packaged composes: a hit is exactly what Hydra composes and needs no
Hydra at all; the key follows every file and flag the compose reads and refuses what it cannot
see; a `--config-dir` and a failed compose are never cached; an entry that is not exactly what
the cache writes (any type, field or file shape) is composed past and replaced, never fatal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from libreyolo.cache_file import CACHE_DIR_ENV
from libreyolo.config import ConfigError, compose_cache, compose_config, to_overrides
from libreyolo.config import compose as compose_module
from libreyolo.config.compose_cache import (
    CONFIGS_DIR,
    MAX_ENTRIES,
    cached_config,
    config_key,
    store_config,
)
from tests.cache_entries import plant

ROOT = Path(__file__).resolve().parents[2]
INFER = to_overrides({"device": "cpu"}, mode="infer")
OVERRIDE_SETS = {
    "infer defaults": INFER,
    "run defaults": to_overrides({}, mode="run"),
    "typed flags": to_overrides(
        {"device": "cpu", "imgsz": 320, "runs": 20, "project": "C:\\x y's", "conf": 0.1},
        mode="infer",
    ),
    "keys": ["batch=4", "imgsz=320", "threads=2", "dataset.name_or_path='/data/my set/d.yaml'"],
}
# Selections of a group whose YAML sets what only Hydra knows: composed every time.
GROUP_SETS = {
    "a yolox model, onnxruntime": ["mode=infer", "model=yolox_s", "exec=onnxruntime"],
    "quick window, batch 4": ["window=quick", "batch=4", "imgsz=320", "threads=2"],
    "a dataset path": ["dataset=custom", "dataset.name_or_path='/data/my set/data.yaml'"],
}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache" / "configs"


def _hydra_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("composed through Hydra")

    monkeypatch.setattr(compose_module, "_composed", refuse)


@pytest.mark.parametrize("overrides", list(OVERRIDE_SETS.values()), ids=list(OVERRIDE_SETS))
def test_a_cached_compose_is_exactly_hydras(
    cache: Path, monkeypatch: pytest.MonkeyPatch, overrides: list[str]
) -> None:
    composed = compose_module._composed(overrides, None, "profile")
    first = compose_config(overrides)
    assert first == composed and len(list(cache.iterdir())) == 1
    _hydra_refused(monkeypatch)
    assert compose_config(overrides) == composed


@pytest.mark.parametrize("overrides", list(GROUP_SETS.values()), ids=list(GROUP_SETS))
def test_a_group_selection_is_composed_every_time(cache: Path, overrides: list[str]) -> None:
    assert compose_config(overrides) == compose_module._composed(overrides, None, "profile")
    assert not cache.exists()


TYPED = to_overrides({"device": "cpu", "imgsz": 320, "runs": 20, "project": "mine"}, mode="infer")


@pytest.mark.parametrize(
    "edit",
    [
        {"imgsz": 640},
        {"project": "elsewhere"},
        {"window": {"runs": 5}},
        {"device": {"name": "0"}},
        {"mode": "run"},
    ],
    ids=["imgsz", "project", "window.runs", "device", "mode"],
)
def test_an_entry_that_does_not_hold_what_was_typed_is_not_used(
    cache: Path, edit: dict[str, object]
) -> None:
    """The planted entry of issue 44: a valid config under the key of the typed flags, with
    another --imgsz, --runs or --project. It is composed past and replaced."""
    key = config_key(TYPED, "profile")
    assert key is not None
    good = msgspec.to_builtins(compose_module._composed(TYPED, None, "profile"))
    planted = {**good}
    for name, value in edit.items():
        planted[name] = {**good[name], **value} if isinstance(value, dict) else value
    plant(f"{key}.json", {"config": planted}, subfolder=CONFIGS_DIR)  # sealed, as if ours
    assert cached_config(key) is not None  # a valid config: only the overrides tell
    assert cached_config(key, TYPED) is None
    assert msgspec.to_builtins(compose_config(TYPED)) == good
    assert msgspec.to_builtins(cached_config(key, TYPED)) == good  # replaced


HIT = """
import sys
from libreyolo.config import compose_config
config = compose_config(sys.argv[1:])
print("hydra" in sys.modules, "omegaconf" in sys.modules, config)
"""


def test_a_second_process_composes_without_importing_hydra(tmp_path: Path) -> None:
    env = {**os.environ, CACHE_DIR_ENV: str(tmp_path), "PYTHONPATH": str(ROOT)}
    lines = [
        subprocess.run(
            [sys.executable, "-c", HIT, *INFER],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            timeout=120,
        ).stdout.split(" ", 2)
        for _ in range(2)
    ]
    assert [line[:2] for line in lines] == [["True", "True"], ["False", "False"]]
    assert lines[0][2] == lines[1][2]  # the same config, printed by its dataclass repr


def test_the_key_follows_the_overrides_and_their_order() -> None:
    key = config_key(["batch=2", "imgsz=320"], "profile")
    assert key is not None and key == config_key(["batch=2", "imgsz=320"], "profile")
    others = {
        config_key(["imgsz=320", "batch=2"], "profile"),  # the later one wins in Hydra
        config_key(["batch=2", "imgsz=320", "amp=false"], "profile"),
        config_key(["batch=2", "imgsz=320"], "other"),
        config_key(["batch=2 imgsz=320"], "profile"),
    }
    assert len(others) == 4 and key not in others


@pytest.mark.parametrize(
    "override",
    [
        "project=${oc.env:HOME}",
        "hydra.searchpath=[file:///tmp/elsewhere]",
        "+hydra/callbacks=mlflow",
        "~hydra.run",
    ],
)
def test_a_compose_that_reads_beyond_the_key_has_none(override: str) -> None:
    assert config_key(["batch=2", override], "profile") is None


def _packaged_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "libreyolo"
    shutil.copytree(ROOT / "libreyolo" / "conf", copy / "conf")
    shutil.copytree(ROOT / "libreyolo" / "config", copy / "config")
    shutil.copy(ROOT / "libreyolo" / "defaults.py", copy / "defaults.py")
    monkeypatch.setattr(compose_cache, "PACKAGE", copy)
    return copy


@pytest.mark.parametrize(
    "change",
    [
        "conf/window/quick.yaml",  # a byte of an option
        "conf/model/yolo9z.yaml",  # a new option
        "config/schema.py",  # a default of the schema
        "defaults.py",
    ],
)
def test_the_key_follows_every_packaged_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    copy = _packaged_copy(tmp_path, monkeypatch)
    before = config_key(INFER, "profile")
    path = copy / change
    path.write_bytes((path.read_bytes() if path.exists() else b"") + b"\n# changed\n")
    after = config_key(INFER, "profile")
    assert before is not None and after is not None and before != after


def test_the_key_follows_the_hydra_plugins_on_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = config_key(INFER, "profile")
    plugin = tmp_path / "hydra_plugins" / "another_search_path" / "__init__.py"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("# a SearchPathPlugin could add a config folder\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    added = config_key(INFER, "profile")
    plugin.write_text("# a SearchPathPlugin that adds another config folder\n")
    edited = config_key(INFER, "profile")
    assert len({before, added, edited}) == 3


def test_a_file_that_cannot_be_read_while_keying_means_a_compose(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def vanished() -> list[Path]:
        raise FileNotFoundError("a plugin file removed while it was listed")

    monkeypatch.setattr(compose_cache, "_own_files", vanished)
    assert config_key(INFER, "profile") is None
    assert msgspec.to_builtins(compose_config(INFER)) == GOOD
    assert not cache.exists()


def test_a_config_dir_is_composed_every_time(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "mine"
    (folder / "window").mkdir(parents=True)
    (folder / "window" / "mine.yaml").write_text("warmup: 3\nsteps: 4\nruns: 5\nrepeat: 1\n")
    config = compose_config(["window=mine"], config_dir=folder)
    assert (config.window.warmup, config.window.runs) == (3, 5)
    (folder / "window" / "mine.yaml").write_text("warmup: 6\nsteps: 4\nruns: 5\nrepeat: 1\n")
    assert compose_config(["window=mine"], config_dir=folder).window.warmup == 6
    assert not cache.exists()


def test_a_failed_compose_is_not_cached(cache: Path) -> None:
    for _ in range(2):
        with pytest.raises(ConfigError, match=r"window\.warmpu"):
            compose_config(["window.warmpu=3"])
    assert not cache.exists()


GOOD = msgspec.to_builtins(compose_module._composed(INFER, None, "profile"))
HOSTILE = {
    "not json": b"{not json",
    "a list": b"[1, 2]",
    "nested too deep": b"[" * 100_000,
    "over the size cap": b" " * (1 << 20) + b"{}",
    "no config": json.dumps({"other": GOOD}).encode(),
    "config not an object": json.dumps({"config": [1, 2]}).encode(),
    "a string batch": json.dumps({"config": {**GOOD, "batch": "4"}}).encode(),
    "a bool batch": json.dumps({"config": {**GOOD, "batch": True}}).encode(),
    "an unknown mode": json.dumps({"config": {**GOOD, "mode": "train"}}).encode(),
    "a _target_": json.dumps({"config": {**GOOD, "_target_": "os.system"}}).encode(),
    "a nested _target_": json.dumps(
        {"config": {**GOOD, "model": {**GOOD["model"], "_target_": "os.system"}}}
    ).encode(),
    "a missing field": json.dumps(
        {"config": {k: v for k, v in GOOD.items() if k != "batch"}}
    ).encode(),
}


@pytest.mark.parametrize("payload", list(HOSTILE.values()), ids=list(HOSTILE))
def test_an_entry_that_is_not_the_caches_own_is_composed_past_and_replaced(
    cache: Path, payload: bytes
) -> None:
    key = config_key(INFER, "profile")
    assert key is not None
    cache.mkdir(parents=True)
    try:
        parsed = json.loads(payload)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict):  # sealed: the entry's own check must refuse it
        plant(f"{key}.json", parsed, subfolder=CONFIGS_DIR)
    else:
        (cache / f"{key}.json").write_bytes(payload)
    assert cached_config(key) is None
    assert msgspec.to_builtins(compose_config(INFER)) == GOOD
    assert msgspec.to_builtins(cached_config(key)) == GOOD  # rewritten, whole


@pytest.mark.parametrize("shape", ["fifo", "folder"])
def test_an_entry_that_is_not_a_file_is_composed_past(cache: Path, shape: str) -> None:
    key = config_key(INFER, "profile")
    assert key is not None
    cache.mkdir(parents=True)
    entry = cache / f"{key}.json"
    if shape == "fifo":
        os.mkfifo(entry)  # opening it for reading would block the run forever
    else:
        entry.mkdir()
    assert msgspec.to_builtins(compose_config(INFER)) == GOOD


def test_a_cache_that_cannot_be_written_costs_only_the_compose(unwritable_cache: Path) -> None:
    assert msgspec.to_builtins(compose_config(INFER)) == GOOD
    assert unwritable_cache.read_text() == "not a folder"


def _entry(i: int) -> str:
    return f"{i:032x}.json"


def test_the_cache_keeps_the_newest_entries(cache: Path) -> None:
    cache.mkdir(parents=True)
    for i in range(MAX_ENTRIES):
        old = cache / _entry(i)
        old.write_text("{}")
        os.utime(old, ns=(10**18 + i, 10**18 + i))
    foreign = cache / "notes.json"  # not a name the cache writes: never pruned
    foreign.write_text("{}")
    os.utime(foreign, ns=(1, 1))
    config = compose_module._composed(INFER, None, "profile")
    store_config("f" * 32, config)
    names = {path.name for path in cache.iterdir()}
    assert len(names) == MAX_ENTRIES + 1 and "notes.json" in names
    assert "f" * 32 + ".json" in names and _entry(0) not in names and _entry(1) in names


def test_pruning_never_follows_a_linked_folder(cache: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for i in range(MAX_ENTRIES + 5):
        (elsewhere / _entry(i)).write_text("{}")
    cache.parent.mkdir(parents=True)
    cache.symlink_to(elsewhere, target_is_directory=True)
    store_config("f" * 32, compose_module._composed(INFER, None, "profile"))
    assert len([p for p in elsewhere.iterdir() if p.name != "f" * 32 + ".json"]) == MAX_ENTRIES + 5
