"""YOLOv9 checkpoints: fixture parity, v1 round trip, legacy forms and every refused file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from libreyolo.errors import CheckpointError, ExitStatus, MissingFileError, UsageError
from libreyolo.workload.api import load_model
from libreyolo.workload.checkpoint_io import class_names
from libreyolo.workload.registry import detect_file
from libreyolo.workload.yolo9.checkpoint import (
    load_checkpoint,
    save_checkpoint,
    size_from_filename,
)
from libreyolo.workload.yolo9.model import YOLOv9
from tests.fixture_files import YOLO9T, fixture_file

V1_KEYS = {
    "model", "schema_version", "libreyolo_version", "model_family", "size", "task", "nc",
    "names", "imgsz", "letterbox_pad",
}  # fmt: skip


class NotAllowed:
    """A class torch.load(weights_only=True) refuses to unpickle."""


@pytest.fixture(scope="module")
def fixture_pt() -> Path:
    return fixture_file(YOLO9T)


@pytest.fixture(scope="module")
def raw(fixture_pt: Path) -> dict[str, Any]:
    return torch.load(fixture_pt, map_location="cpu", weights_only=True)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def model(fixture_pt: Path) -> YOLOv9:
    return load_checkpoint(fixture_pt)


def _save(obj: object, path: Path) -> Path:
    torch.save(obj, path)
    return path


def _same_weights(a: YOLOv9, b: YOLOv9) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return list(sa) == list(sb) and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_fixture_outputs_match(model: YOLOv9, fixture_pt: Path) -> None:
    expected = np.load(fixture_pt.with_suffix(".expected.npz"))
    with torch.no_grad():
        out = model.forward_features(torch.from_numpy(expected["input"]))
    got = {"out.predictions": out["predictions"], "out.x8.features": out["x8"]}
    got |= {"out.x16.features": out["x16"], "out.x32.features": out["x32"]}
    got |= {f"out.raw_outputs.{i}": m for i, m in enumerate(out["raw_outputs"])}
    assert set(got) == set(expected.files) - {"input"}
    for name, tensor in got.items():
        diff = np.abs(tensor.numpy() - expected[name]).max()
        assert diff < 1e-3, f"{name}: max abs diff {diff}"


def test_state_dict_matches_fixture_key_for_key(model: YOLOv9, raw: dict[str, Any]) -> None:
    ours, theirs = model.state_dict(), raw["model"]
    assert len(theirs) == 1338
    assert list(ours) == list(theirs)
    for key, value in theirs.items():
        assert (ours[key].shape, ours[key].dtype) == (value.shape, value.dtype), key


def test_metadata_lands_on_the_model(model: YOLOv9, raw: dict[str, Any]) -> None:
    assert not model.training
    assert (model.family, model.size, model.nc) == ("yolo9", "t", 80)
    assert model.names == raw["names"] and model.names[0] == "person"
    assert (model.imgsz, model.letterbox_pad, model.cls_width) == (640, "topleft", 80)


def test_save_load_round_trip(model: YOLOv9, raw: dict[str, Any], tmp_path: Path) -> None:
    path = save_checkpoint(model, tmp_path / "out" / "copy.pt")
    assert sorted(p.name for p in path.parent.iterdir()) == ["copy.pt"]  # no temp file left
    written = torch.load(path, weights_only=True)
    assert set(written) == V1_KEYS == set(raw)
    assert {k: written[k] for k in V1_KEYS - {"model", "libreyolo_version"}} == {
        k: raw[k] for k in V1_KEYS - {"model", "libreyolo_version"}
    }
    assert _same_weights(load_checkpoint(path), model)


def _family_size(path: Path) -> tuple[str, str | None]:
    workload, size, _ = detect_file(path)
    return workload.name, size


def test_detect_family_size(fixture_pt: Path) -> None:
    assert _family_size(fixture_pt) == ("yolo9", "t")


def test_legacy_forms_load(model: YOLOv9, raw: dict[str, Any], tmp_path: Path) -> None:
    legacy = {f"module.{k.replace('head.', 'detect.', 1)}": v for k, v in raw["model"].items()}
    legacy["module.detect.dfl.conv.weight"] = torch.arange(16.0).view(1, 16, 1, 1)
    variants = {
        "bare.pt": legacy,
        "wrapped_sd.pt": {"state_dict": raw["model"], "epoch": 3},
        "wrapped_ema.pt": {"ema": {"module": raw["model"], "updates": 10}},
    }
    for name, obj in variants.items():
        loaded = load_checkpoint(_save(obj, tmp_path / name))
        assert _same_weights(loaded, model), name
        assert (loaded.nc, loaded.letterbox_pad) == (80, "topleft")


def test_trainer_checkpoint_with_numpy_rng_state(
    model: YOLOv9, raw: dict[str, Any], tmp_path: Path
) -> None:
    trainer = {
        **raw,
        "epoch": 4,
        "optimizer": {"state": {}, "param_groups": [{"lr": 0.01, "params": [0, 1]}]},
        "ema": raw["model"],
        "rng_state": {"torch": torch.get_rng_state(), "numpy": np.random.get_state()},
        "best_mAP50_95": np.float64(0.25),
    }
    assert _same_weights(load_checkpoint(_save(trainer, tmp_path / "last.pt")), model)


def test_aux_keys_dropped_or_kept(tmp_path: Path) -> None:
    torch.manual_seed(0)
    with_aux = YOLOv9("t", nc=3, aux=True)
    path = save_checkpoint(with_aux, tmp_path / "pgi.pt")
    plain = load_checkpoint(path)
    assert plain.aux is None and not any(k.startswith("aux") for k in plain.state_dict())
    kept = load_checkpoint(path, aux=True)
    assert _same_weights(kept, with_aux)


def test_aux_branch_is_built_fresh_on_detection_weights(fixture_pt: Path) -> None:
    model = load_checkpoint(fixture_pt, aux=True)
    assert model.aux is not None and model.aux_head is not None
    assert model.aux_head.cls_width == 80


def test_fine_tune_keeps_the_file_class_width(tmp_path: Path) -> None:
    path = save_checkpoint(YOLOv9("t", nc=2, cls_width=80), tmp_path / "ft.pt")
    loaded = load_checkpoint(path)
    assert (loaded.nc, loaded.cls_width, len(loaded.names)) == (2, 80, 2)


def test_filename_gives_the_size_last(raw: dict[str, Any], tmp_path: Path) -> None:
    assert size_from_filename("weights/LibreYOLO9s.pt") == "s"
    assert size_from_filename("libreyolo9m-detect.pt") == "m"
    assert size_from_filename("LibreYOLO9E2Et.pt") is None
    assert size_from_filename("model.pt") is None
    # Tensors outrank the name: a t state dict named like an s file is a t.
    assert load_checkpoint(_save(raw["model"], tmp_path / "LibreYOLO9s.pt")).size == "t"
    stemless = {k: v for k, v in raw["model"].items() if not k.startswith("backbone.conv0.")}
    named = _save(stemless, tmp_path / "LibreYOLO9t.pt")
    assert _family_size(named) == ("yolo9", "t")
    with pytest.raises(CheckpointError, match=r"6 tensors of YOLOv9-t are missing"):
        load_checkpoint(named)
    with pytest.raises(CheckpointError, match="cannot tell the YOLOv9 size"):
        load_checkpoint(_save(stemless, tmp_path / "anonymous.pt"))


def test_conflicting_size_names_both(fixture_pt: Path) -> None:
    with pytest.raises(
        CheckpointError, match=r"size 's' was asked for .* YOLOv9-t \(from metadata"
    ):
        load_checkpoint(fixture_pt, size="s")
    with pytest.raises(UsageError, match="unknown YOLOv9 size 'q'"):
        load_checkpoint(fixture_pt, size="q")


def test_metadata_that_contradicts_tensors(raw: dict[str, Any], tmp_path: Path) -> None:
    lying = _save({**raw, "size": "s"}, tmp_path / "lying.pt")
    with pytest.raises(
        CheckpointError, match="metadata says size 's' but the tensors are size 't'"
    ):
        load_checkpoint(lying)
    wrong_nc = _save({**raw, "nc": 3}, tmp_path / "nc.pt")
    with pytest.raises(CheckpointError, match="metadata says nc=3 but the head has 80"):
        load_checkpoint(wrong_nc)


def _bad_files(raw: dict[str, Any], fixture_pt: Path, tmp: Path) -> dict[str, tuple[Path, str]]:
    (tmp / "text.pt").write_text("not a checkpoint\n")
    (tmp / "empty.pt").write_bytes(b"")
    (tmp / "trunc.pt").write_bytes(fixture_pt.read_bytes()[: fixture_pt.stat().st_size // 2])
    yolox_keys = {"backbone.backbone.stem.conv.conv.weight": torch.zeros(1)}
    return {
        "text": (tmp / "text.pt", "not a PyTorch checkpoint"),
        "empty": (tmp / "empty.pt", "empty file, not a checkpoint"),
        "truncated": (tmp / "trunc.pt", "truncated or corrupt checkpoint"),
        "yolox": (_save({**raw, "model_family": "yolox"}, tmp / "x.pt"), "holds a 'yolox' model"),
        "yolox keys": (_save(yolox_keys, tmp / "xk.pt"), "holds a 'yolox' model"),
        "unsafe": (
            _save({"model": NotAllowed()}, tmp / "unsafe.pt"),
            r"needs unsafe unpickling \(it stores .*NotAllowed\); refusing to load it",
        ),
        "list": (_save([1, 2], tmp / "list.pt"), "holds a list, not a checkpoint dict"),
        "no weights": (_save({"epoch": 1}, tmp / "meta.pt"), "no state dict found"),
        "other keys": (_save({"a.b": torch.zeros(1)}, tmp / "o.pt"), "does not hold a YOLOv9"),
        "mtl": (_save({"0.conv.weight": torch.zeros(1)}, tmp / "mtl.pt"), "MTL numbered keys"),
        "segment": (_save({**raw, "task": "segment"}, tmp / "seg.pt"), "holds a 'segment' model"),
        "schema 2": (_save({**raw, "schema_version": "2.0"}, tmp / "s2.pt"), "schema version 2.0"),
        "imgsz": (_save({**raw, "imgsz": "big"}, tmp / "i.pt"), "imgsz 'big' is not an input size"),
        "pad": (_save({**raw, "letterbox_pad": "x"}, tmp / "p.pt"), "letterbox_pad 'x' is not"),
    }


def test_bad_files_raise_one_line_checkpoint_errors(
    raw: dict[str, Any], fixture_pt: Path, tmp_path: Path
) -> None:
    for case, (path, message) in _bad_files(raw, fixture_pt, tmp_path).items():
        with pytest.raises(CheckpointError, match=message) as info:
            load_checkpoint(path)
        assert "\n" not in str(info.value), case
        assert info.value.status == ExitStatus.USAGE


def test_missing_paths(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError, match="weights file not found"):
        load_checkpoint(tmp_path / "nope.pt")
    with pytest.raises(MissingFileError):
        load_checkpoint(tmp_path)  # a directory is not a weights file


def test_unusable_device_is_a_usage_error(fixture_pt: Path) -> None:
    with pytest.raises(UsageError, match="device 'nonsense' cannot be used"):
        load_checkpoint(fixture_pt, device="nonsense")


def test_fused_models_are_not_saved(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="fused model cannot be saved"):
        save_checkpoint(YOLOv9("t", nc=1).eval().fuse(), tmp_path / "f.pt")


def test_api_load_model(fixture_pt: Path, tmp_path: Path) -> None:
    copy = tmp_path / "LibreYOLO9t.pt"
    shutil.copyfile(fixture_pt, copy)
    model = load_model(str(copy))
    assert isinstance(model, YOLOv9) and not model.training
    with pytest.raises(MissingFileError, match=r"weights not found: .*missing\.pt"):
        load_model(tmp_path / "missing.pt")
    with pytest.raises(CheckpointError, match="size 'm' was asked for"):
        load_model(copy, size="m")


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (None, {0: "class0", 1: "class1", 2: "class2"}),
        (["cat", 7, 2.5, {"past": "nc"}], {0: "cat", 1: "7", 2: "2.5"}),
        (("cat",), {0: "cat", 1: "class1", 2: "class2"}),
        (
            {2: "dog", "0": "cat", 10**30: "huge", "9" * 5000: "long"},
            {0: "cat", 1: "class1", 2: "dog"},
        ),
    ],
    ids=["absent", "list", "tuple", "index map"],
)
def test_class_names_forms(names: object, expected: dict[int, str]) -> None:
    assert class_names(names, 3, Path("w.pt")) == expected


def test_more_classes_than_a_dataset_may_have_is_refused_before_naming_them() -> None:
    with pytest.raises(CheckpointError) as info:
        class_names(None, 10**12, Path("w.pt"))
    assert str(info.value) == "w.pt: nc=1000000000000 is more than 10000 classes"


BAD_NAMES = {
    "text key": ({"a": "cat"}, "'names' key 'a' is not a class index"),
    "negative key": ({-1: "cat"}, "'names' key -1 is not a class index"),
    "float key": ({0.0: "cat"}, "'names' key 0.0 is not a class index"),
    "bool key": ({True: "cat"}, "'names' key True is not a class index"),
    "signed text key": ({"+1": "cat"}, "'names' key '+1' is not a class index"),
    "long key": ({"x" * 50: "cat"}, "'names' key (a str) is not a class index"),
    "twice": ({0: "cat", "0": "dog"}, "'names' gives class 0 twice"),
    "entry": (["cat", {"x": 1}], "'names' entry 1 is a dict, not a class name"),
    "bool entry": ({0: False}, "'names' entry 0 is a bool, not a class name"),
    "not a list": ("cat,dog", "'names' is a str, not a list or dict of class names"),
    "number": (3, "'names' is a int, not a list or dict of class names"),
}


@pytest.fixture(scope="module")
def two_class_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """family -> the dict its saver writes for a 2-class model (built once: names vary)."""
    from libreyolo.workload.yolox import checkpoint as yolox_checkpoint
    from libreyolo.workload.yolox.model import YOLOX

    folder = tmp_path_factory.mktemp("two_class")
    saved = {
        "yolo9": save_checkpoint(YOLOv9("t", nc=2), folder / "yolo9.pt"),
        "yolox": yolox_checkpoint.save_checkpoint(YOLOX("n", nc=2), folder / "yolox.pt"),
    }
    return {family: torch.load(path, weights_only=True) for family, path in saved.items()}


@pytest.mark.parametrize("family", ["yolo9", "yolox"])
@pytest.mark.parametrize("case", BAD_NAMES)
def test_unusable_names_are_one_checkpoint_error(
    family: str, case: str, two_class_files: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    from libreyolo.workload.yolox import checkpoint as yolox_checkpoint

    load = {"yolo9": load_checkpoint, "yolox": yolox_checkpoint.load_checkpoint}[family]
    names, message = BAD_NAMES[case]
    path = _save({**two_class_files[family], "names": names}, tmp_path / "w.pt")
    with pytest.raises(CheckpointError) as info:
        load(path)
    assert (str(info.value), info.value.status) == (f"{path}: {message}", ExitStatus.USAGE)


def test_infer_with_unusable_names_exits_2(
    two_class_files: dict[str, dict[str, Any]], tmp_path: Path, run_cli: Any
) -> None:
    path = _save({**two_class_files["yolo9"], "names": {"a": "cat"}}, tmp_path / "w.pt")
    argv = ["profile", "infer", "--weights", str(path), "--device", "cpu", "--imgsz", "32"]
    result = run_cli([*argv, "--runs", "2", "--warmup", "0", "--project", str(tmp_path / "r")])
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == f"{path}: 'names' key 'a' is not a class index\n"
