"""The machine's FLOP count cache: a second process reads the count the first made, under a key
that changes with the architecture, its source, the input and the mode; a cache file that is
not what it should be (not JSON, a FIFO, a folder, huge, entries of the wrong shape) is counted
past and rewritten, never fatal, and a model with no source file is never cached."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from libreyolo.cache_file import CACHE_DIR_ENV
from libreyolo.measure import compute, flop_cache
from libreyolo.measure.compute import count_model_flops
from libreyolo.measure.flop_cache import CACHE_NAME, MAX_ENTRIES, flop_key
from tests.cache_entries import plant, stored
from tests.measure.test_flop_count import BACKWARD, BATCH, FORWARD, S, _model


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache folder and no counts remembered in this process: each call is a new run."""
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(compute, "_COUNTS", {})
    return tmp_path / "cache" / CACHE_NAME


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compute, "_COUNTS", {})


def _no_counting(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("counted again")

    monkeypatch.setattr(compute, "count_flops", refuse)


def test_a_second_run_reads_the_first_runs_count(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = count_model_flops(_model(True), batch=BATCH, imgsz=S, training=True, notes=[])
    assert first is not None and first.cached is False
    assert (first.forward_per_image, first.backward_per_image) == (FORWARD, BACKWARD)
    assert [set(entry) for entry in stored(CACHE_NAME).values()] == [
        {"forward_flops", "backward_flops", "batch", "imgsz", "count_ms"}
    ]
    _new_process(monkeypatch)
    _no_counting(monkeypatch)
    second = count_model_flops(_model(True), batch=BATCH, imgsz=S, training=True, notes=[])
    assert second is not None and second.cached is True
    assert (second.per_image, second.forward_per_image) == (first.per_image, FORWARD)
    assert second.count_ms == first.count_ms  # the original count's time, as ONNX's export_s


def test_the_key_changes_with_the_input_the_mode_and_the_architecture() -> None:
    model = _model(False)
    key = flop_key(model, batch=1, imgsz=S, training=False)
    assert key is not None and key == flop_key(_model(False), batch=1, imgsz=S, training=False)
    others = {
        flop_key(model, batch=2, imgsz=S, training=False),
        flop_key(model, batch=1, imgsz=S + 8, training=False),
        flop_key(model, batch=1, imgsz=S, training=True),
    }
    wider = _model(False)
    wider.pointwise = nn.Conv2d(8, 16, 1, stride=2)  # same weights' shapes, another stride
    others.add(flop_key(wider, batch=1, imgsz=S, training=False))
    assert len(others) == 4 and key not in others


CLASS_SOURCE = """
from torch import nn


class Local(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv(x){extra}
"""


def _import_local(folder: Path, extra: str) -> nn.Module:
    path = folder / "local_flop_model.py"
    path.write_text(CLASS_SOURCE.format(extra=extra))
    spec = importlib.util.spec_from_file_location("local_flop_model", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["local_flop_model"] = module
    spec.loader.exec_module(module)
    return module.Local().eval()  # type: ignore[no-any-return]


def test_the_key_changes_with_the_source_of_a_module_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, "local_flop_model", raising=False)
    before = flop_key(_import_local(tmp_path, ""), batch=1, imgsz=S, training=False)
    rerouted = _import_local(tmp_path, " @ self.conv.weight.new_ones(S - 2, S - 2)")
    after = flop_key(rerouted, batch=1, imgsz=S, training=False)
    assert before is not None and after is not None and before != after


def test_a_model_with_no_source_file_is_counted_every_time(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    namespace: dict[str, object] = {"nn": nn}
    exec(CLASS_SOURCE.format(extra=""), namespace)  # as `python -c` defines it: no file
    model = namespace["Local"]().eval()  # type: ignore[operator]
    assert flop_key(model, batch=1, imgsz=S, training=False) is None
    flops = count_model_flops(model, batch=1, imgsz=S, training=False, notes=[])
    assert flops is not None and flops.cached is False
    assert not cache.exists()


def test_a_source_gone_since_its_import_means_a_count_not_a_key(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flop_cache, "_class_sources", lambda model: [tmp_path / "gone.py"])
    assert flop_key(_model(False), batch=1, imgsz=S, training=False) is None
    flops = count_model_flops(_model(False), batch=1, imgsz=S, training=False, notes=[])
    assert flops is not None and flops.per_image == FORWARD and not cache.exists()


def _fill(cache: Path, payload: bytes) -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(payload)


GOOD = {"forward_flops": 10, "backward_flops": None, "batch": 1, "imgsz": S, "count_ms": 1.0}
HOSTILE_ENTRIES = {
    "bool count": {**GOOD, "forward_flops": True},
    "negative": {**GOOD, "forward_flops": -5},
    "zero backward": {**GOOD, "backward_flops": 0},
    "string": {**GOOD, "forward_flops": "10"},
    "float count": {**GOOD, "forward_flops": 10.5},
    "beyond an exaFLOP": {**GOOD, "forward_flops": 10**19},
    "unknown field": {**GOOD, "_target_": "os.system"},
    "missing field": {k: v for k, v in GOOD.items() if k != "count_ms"},
    "another batch": {**GOOD, "batch": 2},
    "negative time": {**GOOD, "count_ms": -1.0},
    "not an object": [10, None, 1, S, 1.0],
}


@pytest.mark.parametrize("entry", list(HOSTILE_ENTRIES.values()), ids=list(HOSTILE_ENTRIES))
def test_a_malformed_entry_under_the_key_is_counted_past_and_replaced(
    cache: Path, entry: object
) -> None:
    model = _model(False)
    key = flop_key(model, batch=1, imgsz=S, training=False)
    assert key is not None
    plant(CACHE_NAME, {key: entry, "other": GOOD})  # sealed: the entry's own check decides
    flops = count_model_flops(model, batch=1, imgsz=S, training=False, notes=[])
    assert flops is not None and flops.cached is False and flops.per_image == FORWARD
    kept = stored(CACHE_NAME)
    assert kept["other"] == GOOD  # a good entry of another model is kept
    assert kept[key]["forward_flops"] == FORWARD  # type: ignore[index]


@pytest.mark.parametrize(
    "payload",
    [b"{not json", b"[1, 2]", b"[" * 100_000, b" " * (1 << 20) + b"{}", b"\xff\xfe"],
    ids=["not json", "not an object", "nested too deep", "over the size cap", "not utf-8"],
)
def test_a_cache_file_that_is_not_ours_is_counted_past_and_rewritten(
    cache: Path, payload: bytes
) -> None:
    _fill(cache, payload)
    flops = count_model_flops(_model(False), batch=1, imgsz=S, training=False, notes=[])
    assert flops is not None and flops.cached is False and flops.per_image == FORWARD
    assert len(stored(CACHE_NAME)) == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_in_the_caches_place_is_not_read(cache: Path) -> None:
    cache.parent.mkdir(parents=True)
    os.mkfifo(cache)  # opening it for reading would block the run forever
    flops = count_model_flops(_model(False), batch=1, imgsz=S, training=False, notes=[])
    assert flops is not None and flops.cached is False
    assert cache.is_file()  # replaced atomically by a good cache


def test_a_cache_that_cannot_be_written_costs_only_the_count(
    unwritable_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compute, "_COUNTS", {})
    flops = count_model_flops(_model(False), batch=1, imgsz=S, training=False, notes=[])
    assert flops is not None and flops.per_image == FORWARD and flops.cached is False
    assert unwritable_cache.read_text() == "not a folder"


def test_the_cache_keeps_the_newest_entries(cache: Path) -> None:
    plant(CACHE_NAME, {f"old{i}": GOOD for i in range(MAX_ENTRIES)})
    model = _model(False)
    count_model_flops(model, batch=1, imgsz=S, training=False, notes=[])
    kept = stored(CACHE_NAME)
    key = flop_key(model, batch=1, imgsz=S, training=False)
    assert len(kept) == MAX_ENTRIES and list(kept)[-1] == key
    assert "old0" not in kept and f"old{MAX_ENTRIES - 1}" in kept


def test_a_real_model_counted_from_the_cache_equals_its_count(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from libreyolo.workload.yolo9.model import YOLOv9

    torch.manual_seed(0)
    model = YOLOv9("t").eval()
    counted = count_model_flops(model, batch=1, imgsz=64, training=False, notes=[])
    _new_process(monkeypatch)
    _no_counting(monkeypatch)
    cached = count_model_flops(model, batch=1, imgsz=64, training=False, notes=[])
    assert counted is not None and cached is not None and cached.cached
    assert cached.per_image == counted.per_image > 0
    assert flop_cache.cached_count("absent", batch=1, imgsz=64) is None
