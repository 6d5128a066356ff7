"""Nothing in the machine's cache is reached through a symbolic link: a linked cache folder,
subfolder (`configs/`, `onnx/`) or entry file is neither read nor written through, the
folder it names stays byte for byte as it was, the run goes on without that part of the cache
and notes the link. The ONNX folder keeps only the most recently used exports, pruning only
the cache's own names."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import msgspec
import pytest
import torch
from torch import nn

from libreyolo.cache_file import (
    CACHE_DIR_ENV,
    cache_folder,
    cache_problem,
    sealed_payload,
    write_entries,
)
from libreyolo.config import compose as compose_module
from libreyolo.config import compose_config, to_overrides
from libreyolo.config.compose_cache import config_key
from libreyolo.measure import gemm_peak, onnx_export
from libreyolo.measure.compute import device_peaks
from libreyolo.measure.flop_cache import CACHE_NAME as FLOP_CACHE
from libreyolo.measure.flop_cache import cached_count
from libreyolo.measure.gemm_peak import GemmRun, cache_key, measured_peak
from libreyolo.measure.onnx_export import MAX_EXPORTS, cached_or_exported, export_key

CPU = torch.device("cpu")
INFER = to_overrides({"device": "cpu"}, mode="infer")
HOUR_NS = 3600 * 10**9


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder of the user's own outside the cache, which a link in the cache names."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "precious.txt").write_bytes(b"the user's own file")
    return folder


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under `folder` with its bytes, mode and mtime: what "untouched" means."""
    return {
        str(path.relative_to(folder)): (
            path.read_bytes(),
            path.stat().st_mode,
            path.stat().st_mtime_ns,
        )
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _sealed(name: str, entries: dict[str, object], subfolder: str | None = "configs") -> bytes:
    """What the cache itself would write at `name`: sealed, so only the link stops it."""
    payload = sealed_payload(name, entries, subfolder=subfolder)
    assert payload is not None
    return payload


def _planted_config() -> dict[str, object]:
    """A valid config holding what `INFER` asks, with runs no one typed."""
    good = msgspec.to_builtins(compose_module._composed(INFER, None, "profile"))
    return {**good, "window": {**good["window"], "runs": 7}}


def test_a_linked_configs_folder_is_neither_read_nor_written(cache: Path, outside: Path) -> None:
    key = config_key(INFER, "profile")
    assert key is not None
    cache.mkdir(mode=0o700)
    (outside / f"{key}.json").write_bytes(_sealed(f"{key}.json", {"config": _planted_config()}))
    before = _snapshot(outside)
    (cache / "configs").symlink_to(outside, target_is_directory=True)
    config = compose_config(INFER)
    assert config.window.runs != 7  # composed, not the planted entry
    assert config == compose_module._composed(INFER, None, "profile")
    assert _snapshot(outside) == before  # no entry written, nothing pruned there
    assert (cache / "configs").is_symlink()
    problem = cache_problem()
    assert problem == (
        f"symbolic links in the cache folder {cache} are not used (nothing is read or "
        "written through them): configs"
    )


def test_a_linked_config_entry_is_not_read_and_what_it_names_is_untouched(
    cache: Path, outside: Path
) -> None:
    key = config_key(INFER, "profile")
    assert key is not None
    planted = outside / "planted.json"
    (cache / "configs").mkdir(parents=True)
    planted.write_bytes(_sealed(f"{key}.json", {"config": _planted_config()}))
    before = _snapshot(outside)
    (cache / "configs" / f"{key}.json").symlink_to(planted)
    assert f"configs/{key}.json" in (cache_problem() or "")
    assert compose_config(INFER).window.runs != 7
    assert _snapshot(outside) == before
    # the link was replaced by the cache's own entry, which the next run reads
    assert (cache / "configs" / f"{key}.json").is_file()
    assert not (cache / "configs" / f"{key}.json").is_symlink()
    assert cache_problem() is None


class _Calls:
    def __init__(self) -> None:
        self.num_calls = 0

    def __call__(self, device: torch.device, dtype: str) -> GemmRun:
        self.num_calls += 1
        return GemmRun(tflops=0.125, side=64, num_runs=5, calibration_ms=3.0, contended=False)


def test_a_linked_gemm_peak_file_is_not_read(
    cache: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _Calls()
    monkeypatch.setattr(gemm_peak, "calibrate", calls)
    monkeypatch.setattr(gemm_peak, "spot_tflops", lambda device, dtype: 0.1)
    planted = outside / "peaks.json"
    cache.mkdir(mode=0o700)
    entry = {cache_key(CPU, "a CPU", "fp32"): {"tflops": 0.11, "reference": "planted"}}
    planted.write_bytes(_sealed(gemm_peak.CACHE_NAME, entry, subfolder=None))
    before = _snapshot(outside)
    (cache / gemm_peak.CACHE_NAME).symlink_to(planted)
    peak = measured_peak(CPU, "a CPU", "fp32")
    assert (peak.tflops, peak.cached, calls.num_calls) == (0.125, False, 1)
    assert _snapshot(outside) == before
    assert measured_peak(CPU, "a CPU", "fp32").cached is True  # the cache's own file now


def test_a_linked_flop_count_file_is_not_read(cache: Path, outside: Path) -> None:
    planted = outside / "counts.json"
    entry = {"forward_flops": 10, "backward_flops": None, "batch": 1, "imgsz": 64, "count_ms": 1}
    cache.mkdir(mode=0o700)
    planted.write_bytes(_sealed(FLOP_CACHE, {"f" * 32: entry}, subfolder=None))
    before = _snapshot(outside)
    (cache / FLOP_CACHE).symlink_to(planted)
    assert cached_count("f" * 32, batch=1, imgsz=64) is None
    write_entries(FLOP_CACHE, {"g" * 32: entry})
    assert _snapshot(outside) == before


def test_a_linked_cache_folder_is_not_used(cache: Path, outside: Path) -> None:
    before = _snapshot(outside)
    cache.symlink_to(outside, target_is_directory=True)
    assert cache_problem() == (
        f"the cache folder {cache} is a symbolic link: not used "
        f"(set {CACHE_DIR_ENV} to the folder it names)"
    )
    write_entries("a.json", {"k": 1})
    with cache_folder(create=True) as descriptor:
        assert descriptor is None
    assert _snapshot(outside) == before


class _Tiny(nn.Module):
    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


SAMPLE = torch.zeros(1, 3, 8, 8)


def _export(model: nn.Module, *, fresh: bool = False) -> onnx_export.Export:
    with torch.no_grad():
        return cached_or_exported(model, SAMPLE, model(SAMPLE), opset=17, fresh=fresh)


def _key(model: nn.Module) -> str:
    return export_key(model, batch=1, imgsz=8, opset=17)


def _plant_export(folder: Path, key: str) -> None:
    """An export of someone else's and a sidecar whose digest names it: a hit, if read."""
    planted = b"someone else's graph"
    (folder / f"{key}.onnx").write_bytes(planted)
    sidecar = {"export_s": 123.0, "sha256": hashlib.sha256(planted).hexdigest()}
    (folder / f"{key}.json").write_text(json.dumps(sidecar))


def test_a_linked_onnx_folder_is_not_used_and_the_export_still_runs(
    cache: Path, outside: Path
) -> None:
    model = _Tiny()
    _plant_export(outside, _key(model))
    before = _snapshot(outside)
    cache.mkdir(mode=0o700)
    (cache / "onnx").symlink_to(outside, target_is_directory=True)
    export = _export(model)
    assert export.cached is False and export.export_s != 123.0
    assert export.path.is_file() and not export.path.is_relative_to(cache)
    assert export.path.read_bytes().startswith(b"\x08")  # an ONNX protobuf, not the planted
    assert _export(_Tiny(seed=1)).path.parent != outside  # a new key: not written there
    assert _snapshot(outside) == before
    assert "onnx" in (cache_problem() or "")


@pytest.mark.parametrize("which", ["onnx", "json"])
def test_a_linked_export_file_is_not_read_and_what_it_names_is_untouched(
    cache: Path, outside: Path, which: str
) -> None:
    model = _Tiny()
    key = _key(model)
    _plant_export(outside, key)
    good = _export(model)
    if which == "json":  # a sidecar naming the cache's own bytes: only its export_s is false
        digest = hashlib.sha256(good.path.read_bytes()).hexdigest()
        (outside / f"{key}.json").write_text(json.dumps({"export_s": 123.0, "sha256": digest}))
    before = _snapshot(outside)
    entry = cache / "onnx" / f"{key}.{which}"
    entry.unlink()
    entry.symlink_to(outside / f"{key}.{which}")
    again = _export(model)
    assert again.cached is False and again.export_s != 123.0
    assert again.path == good.path and not entry.is_symlink()  # replaced by the cache's own
    assert _snapshot(outside) == before


def test_a_sidecar_nested_too_deep_is_exported_again(cache: Path) -> None:
    model = _Tiny()
    first = _export(model)
    first.path.with_suffix(".json").write_bytes(b"[" * 4000)  # within the sidecar's cap
    assert _export(model).cached is False


def test_every_run_notes_a_link_in_the_cache(
    cache: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gemm_peak, "calibrate", _Calls())
    cache.mkdir(mode=0o700)
    (cache / "onnx").symlink_to(outside, target_is_directory=True)
    notes: list[str] = []
    device_peaks(CPU, "a CPU", "fp32", notes)
    assert notes == [
        f"symbolic links in the cache folder {cache} are not used (nothing is read or "
        "written through them): onnx"
    ]


def _fake_exports(folder: Path, count: int, *, size_bytes: int = 100) -> list[str]:
    """`count` exports of the cache's names, oldest first (an hour apart, all in the past)."""
    folder.mkdir(parents=True, exist_ok=True)
    keys = [f"{i:032x}" for i in range(count)]
    for i, key in enumerate(keys):
        for suffix in (".onnx", ".json"):
            path = folder / f"{key}{suffix}"
            path.write_bytes(b"x" * (size_bytes // 2))
            age_ns = time.time_ns() - (count + 1 - i) * HOUR_NS
            os.utime(path, ns=(age_ns, age_ns))
    return keys


def _export_keys(folder: Path) -> set[str]:
    return {
        path.stem
        for path in folder.iterdir()
        if path.suffix in (".onnx", ".json") and not path.is_symlink() and len(path.stem) == 32
    }


def test_the_onnx_folder_keeps_the_newest_exports_and_foreign_files(
    cache: Path, outside: Path
) -> None:
    folder = cache / "onnx"
    keys = _fake_exports(folder, MAX_EXPORTS + 4)
    foreign = [folder / "notes.txt", folder / "mine.onnx", folder / f"{'a' * 31}.onnx"]
    for path in foreign:
        path.write_text("not the cache's")
        os.utime(path, ns=(1, 1))
    (folder / f"{'e' * 32}.onnx").symlink_to(outside / "precious.txt")
    stale = folder / f".{keys[0]}.onnx.0123456789abcdef.tmp"  # a writer killed long ago
    fresh_temp = folder / f".{keys[1]}.onnx.fedcba9876543210.tmp"  # a writer under way
    for path, age_ns in ((stale, 2 * HOUR_NS), (fresh_temp, 0)):
        path.write_bytes(b"partial")
        os.utime(path, ns=(time.time_ns() - age_ns,) * 2)
    before = _snapshot(outside)
    model = _Tiny()
    _export(model)
    assert _export_keys(folder) == {_key(model), *keys[-(MAX_EXPORTS - 1) :]}
    assert all(path.read_text() == "not the cache's" for path in foreign)
    assert (folder / f"{'e' * 32}.onnx").is_symlink() and _snapshot(outside) == before
    assert not stale.exists() and fresh_temp.exists()


def test_the_onnx_folder_keeps_its_byte_budget_newest_first(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _Tiny()
    ours = _export(model)
    ours_bytes = ours.path.stat().st_size + ours.path.with_suffix(".json").stat().st_size
    keys = _fake_exports(cache / "onnx", 5, size_bytes=1000)
    monkeypatch.setattr(onnx_export, "MAX_EXPORT_BYTES", ours_bytes + 2500)
    _export(model, fresh=True)  # stored again: the folder is pruned
    assert _export_keys(cache / "onnx") == {_key(model), *keys[-2:]}
    monkeypatch.setattr(onnx_export, "MAX_EXPORT_BYTES", 1)
    _export(model, fresh=True)
    assert _export_keys(cache / "onnx") == {_key(model)}  # the one just made always stays


def test_an_export_used_again_outlives_older_unused_ones(cache: Path) -> None:
    used = _Tiny()
    path = _export(used).path
    for name in (path, path.with_suffix(".json")):
        os.utime(name, ns=(1, 1))  # the oldest of all
    keys = _fake_exports(cache / "onnx", MAX_EXPORTS)
    assert _export(used).cached is True  # used now
    newest = _Tiny(seed=1)
    _export(newest)
    assert _export_keys(cache / "onnx") == {
        _key(newest),
        _key(used),
        *keys[-(MAX_EXPORTS - 2) :],
    }
