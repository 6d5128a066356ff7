"""YOLOX checkpoints: the 1.6.0 fixture, 1.6.0-layout round trips, detection and refused files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from libreyolo.errors import CheckpointError, ExitStatus, MissingFileError, UsageError
from libreyolo.workload.yolo9.model import YOLOv9
from libreyolo.workload.yolox.checkpoint import detect, load_checkpoint, save_checkpoint
from libreyolo.workload.yolox.model import YOLOX
from tests.fixture_files import YOLOX_N, fixture_file


class NotAllowed:
    """A class torch.load(weights_only=True) refuses to unpickle."""


@pytest.fixture(scope="module")
def fixture_pt() -> Path:
    return fixture_file(YOLOX_N)


@pytest.fixture(scope="module")
def raw(fixture_pt: Path) -> dict[str, Any]:
    return torch.load(fixture_pt, map_location="cpu", weights_only=True)


def _save(obj: object, path: Path) -> Path:
    torch.save(obj, path)
    return path


def _randomised(size: str, nc: int) -> YOLOX:
    """A model whose BatchNorm statistics are not the identity, so eval outputs use them all."""
    torch.manual_seed(0)
    model = YOLOX(size, nc=nc)
    for name, buf in model.named_buffers():
        if name.endswith("running_mean"):
            buf.normal_(0, 0.1)
        elif name.endswith("running_var"):
            buf.uniform_(0.75, 1.25)
    return model.eval()


def _outputs(model: YOLOX, seed: int = 1) -> list[torch.Tensor]:
    x = torch.rand(2, 3, 64, 96, generator=torch.Generator().manual_seed(seed)) * 255
    with torch.no_grad():
        return model(x)


def test_fixture_loads_and_reproduces_outputs(fixture_pt: Path, raw: dict[str, Any]) -> None:
    model = load_checkpoint(fixture_pt)
    assert not model.training
    assert (model.family, model.size, model.nc, model.imgsz) == ("yolox", "n", 80, 416)
    assert model.names == raw["names"] and model.names[0] == "person"
    expected = np.load(fixture_pt.with_suffix(".expected.npz"))
    with torch.no_grad():
        outputs = model(torch.from_numpy(expected["input"]))
    for i, out in enumerate(outputs):
        assert np.abs(out.numpy() - expected[f"out.{i}"]).max() <= 1e-3


@pytest.mark.parametrize(("size", "nc"), [("t", 3), ("s", 80)])
def test_round_trip_in_the_1_6_0_layout(size: str, nc: int, tmp_path: Path) -> None:
    model = _randomised(size, nc)
    names = {i: f"thing{i}" for i in range(nc)}
    payload = {"model": model.state_dict(), "model_family": "yolox", "size": size, "nc": nc}
    path = _save({**payload, "names": names}, tmp_path / "weights.pt")
    loaded = load_checkpoint(path)
    assert (loaded.size, loaded.nc, loaded.names, loaded.imgsz) == (
        size,
        nc,
        names,
        416 if size == "t" else 640,
    )
    for ours, theirs in zip(_outputs(model), _outputs(loaded), strict=True):
        assert torch.equal(ours, theirs)
    again = load_checkpoint(save_checkpoint(loaded, tmp_path / "again.pt"))
    assert all(torch.equal(a, b) for a, b in zip(_outputs(loaded), _outputs(again), strict=True))
    assert torch.load(tmp_path / "again.pt", weights_only=True)["libreyolo_version"]


def test_size_and_nc_from_keys_alone(tmp_path: Path) -> None:
    for size, nc in (("n", 2), ("t", 7), ("s", 1), ("m", 4)):
        state = YOLOX(size, nc=nc).state_dict()
        assert detect(state) == ("yolox", size, nc)
        loaded = load_checkpoint(_save(state, tmp_path / f"bare_{size}.pt"))
        assert (loaded.size, loaded.nc, loaded.names[0]) == (size, nc, "class0")


def test_detect_routes_only_yolox_keys(raw: dict[str, Any]) -> None:
    assert detect(raw["model"]) == ("yolox", "n", 80)
    assert detect({f"module.{k}": v for k, v in raw["model"].items()}) == ("yolox", "n", 80)
    assert detect(YOLOv9("t", nc=3).state_dict()) is None
    assert detect({"a.b": torch.zeros(1)}) is None
    no_cls = {k: v for k, v in raw["model"].items() if not k.startswith("head.cls_preds.0.")}
    assert detect(no_cls) is None
    odd_stem = {
        **raw["model"],
        "backbone.backbone.stem.conv.conv.weight": torch.zeros(20, 12, 3, 3),
    }
    assert detect(odd_stem) is None


def test_wrapped_and_prefixed_forms_load(raw: dict[str, Any], tmp_path: Path) -> None:
    official = {"start_epoch": 3, "model": raw["model"], "optimizer": {}, "amp": None}
    ddp = {f"module.{k}": v for k, v in raw["model"].items()}
    for name, obj in (
        ("official", official),
        ("ddp", {"state_dict": ddp}),
        ("ema", {"ema": raw["model"]}),
    ):
        assert load_checkpoint(_save(obj, tmp_path / f"{name}.pt")).size == "n", name


def test_file_name_gives_the_size_last(raw: dict[str, Any], tmp_path: Path) -> None:
    # Tensors outrank the name: a nano state dict named like an s file is a nano.
    assert load_checkpoint(_save(raw["model"], tmp_path / "LibreYOLOXs.pt")).size == "n"
    stemless = {
        k: v for k, v in raw["model"].items() if not k.startswith("backbone.backbone.stem.")
    }
    with pytest.raises(CheckpointError, match=r"6 tensors of YOLOX-n are missing"):
        load_checkpoint(_save(stemless, tmp_path / "LibreYOLOXn.pt"))
    with pytest.raises(CheckpointError, match="cannot tell the YOLOX size"):
        load_checkpoint(_save(stemless, tmp_path / "anonymous.pt"))
    # The name makes unknown keys a YOLOX-t; without a class layer nc is unknown.
    unknown = _save({"a.b": torch.zeros(1)}, tmp_path / "LibreYOLOXt.pt")
    with pytest.raises(CheckpointError, match="cannot tell the number of classes"):
        load_checkpoint(unknown)
    with pytest.raises(CheckpointError, match=r"462 tensors of YOLOX-t are missing"):
        load_checkpoint(_save({"model": {"a.b": torch.zeros(1)}, "nc": 2}, unknown))


def test_requested_size(fixture_pt: Path) -> None:
    assert load_checkpoint(fixture_pt, size="n").size == "n"
    with pytest.raises(CheckpointError, match=r"size 's' was asked for .* YOLOX-n \(from metadata"):
        load_checkpoint(fixture_pt, size="s")
    with pytest.raises(UsageError, match="unknown YOLOX size 'q'"):
        load_checkpoint(fixture_pt, size="q")


def _bad_files(raw: dict[str, Any], fixture_pt: Path, tmp: Path) -> dict[str, tuple[Path, str]]:
    (tmp / "text.pt").write_text("not a checkpoint\n")
    (tmp / "empty.pt").write_bytes(b"")
    (tmp / "trunc.pt").write_bytes(fixture_pt.read_bytes()[: fixture_pt.stat().st_size // 2])
    sd = raw["model"]
    saved: dict[str, tuple[object, str]] = {
        "unsafe": (
            {"model": NotAllowed()},
            r"needs unsafe unpickling \(it stores .*NotAllowed\); refusing to load it",
        ),
        "list": ([1, 2], "holds a list, not a checkpoint dict"),
        "no weights": ({"epoch": 1}, "no state dict found"),
        "yolo9 meta": ({**raw, "model_family": "yolo9"}, "holds a 'yolo9' model, not YOLOX"),
        "other keys": ({"a.b": torch.zeros(1)}, "does not hold a YOLOX state dict"),
        "mtl": ({"0.conv.weight": torch.zeros(1)}, "numbered"),
        "missing": (
            {k: v for k, v in sd.items() if not k.startswith("head.obj_preds.2.")},
            r"2 tensors of YOLOX-n are missing, e.g. head.obj_preds.2.weight",
        ),
        "unexpected": (
            {**sd, "head.extra.weight": torch.zeros(1)},
            r"1 tensors are not part of YOLOX-n, e.g. head.extra.weight",
        ),
        "shape": (
            {**sd, "head.reg_preds.0.weight": torch.zeros(5, 64, 1, 1)},
            r"head.reg_preds.0.weight has shape \(5, 64, 1, 1\) but YOLOX-n",
        ),
        "size meta": ({**raw, "size": "q"}, "unknown YOLOX size 'q' in the metadata"),
        "size lie": ({**raw, "size": "s"}, "metadata says size 's' but the tensors are size 'n'"),
        "nc lie": ({**raw, "nc": 3}, "metadata says nc=3 but the head has 80"),
        "nc bad": ({**raw, "nc": "many"}, "cannot tell the number of classes"),
        "segment": ({**raw, "task": "segment"}, "holds a 'segment' model"),
        "schema 2": ({**raw, "schema_version": "2.0"}, "schema version 2.0"),
        "imgsz": ({**raw, "imgsz": "big"}, "imgsz 'big' is not an input size"),
    }
    cases = {
        "text": (tmp / "text.pt", "not a PyTorch checkpoint"),
        "empty": (tmp / "empty.pt", "empty file, not a checkpoint"),
        "truncated": (tmp / "trunc.pt", "truncated or corrupt checkpoint"),
        # Keys outrank a YOLOX file name.
        "yolo9 keys": (
            _save(YOLOv9("t", nc=1).state_dict(), tmp / "LibreYOLOXt.pt"),
            "holds a 'yolo9' model",
        ),
    }
    for i, (case, (obj, message)) in enumerate(saved.items()):
        cases[case] = (_save(obj, tmp / f"bad{i}.pt"), message)
    return cases


def test_bad_files_raise_one_line_checkpoint_errors(
    raw: dict[str, Any], fixture_pt: Path, tmp_path: Path
) -> None:
    for case, (path, message) in _bad_files(raw, fixture_pt, tmp_path).items():
        with pytest.raises(CheckpointError, match=message) as info:
            load_checkpoint(path)
        assert "\n" not in str(info.value), case
        assert str(path) in str(info.value), case
        assert info.value.status == ExitStatus.USAGE


def test_missing_paths_and_devices(fixture_pt: Path, tmp_path: Path) -> None:
    with pytest.raises(MissingFileError, match="weights file not found"):
        load_checkpoint(tmp_path / "nope.pt")
    with pytest.raises(MissingFileError):
        load_checkpoint(tmp_path)
    with pytest.raises(UsageError, match="device 'nonsense' cannot be used"):
        load_checkpoint(fixture_pt, device="nonsense")
